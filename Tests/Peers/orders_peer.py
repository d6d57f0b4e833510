#!/usr/bin/env python3
"""Python grpcio as an order-tracker and chat client no one here wrote.

  orders_peer.py --port N --protos DIR
      Generates its own stubs from orders.proto and chat.proto with grpc_tools, then against
      orders-server on 127.0.0.1:N: creates an order, publishes every kind of update, watches
      from the start and resumes from the middle, checks the error statuses and the bearer
      token, follows with an include set, and chats. Prints "ok NAME" or "FAIL NAME: why" per
      check and a closing "checks: N ok, M failed"; exits non-zero on any failure.
"""
import argparse
import queue
import uuid

import grpc

from peer_checks import Checks, expect, load


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--protos", required=True)
    args = parser.parse_args()
    pb, rpc = load(args.protos, "orders.proto")
    chat_pb, chat_rpc = load(args.protos, "chat.proto")
    channel = grpc.insecure_channel(f"127.0.0.1:{args.port}")
    orders = rpc.OrderTrackingStub(channel)
    chat = chat_rpc.ChatRoomStub(channel)
    alice = [("authorization", "Bearer alice-token")]
    bob = [("authorization", "Bearer bob-token")]
    order_id = f"py-{uuid.uuid4().hex[:8]}"
    state = {}
    checks = Checks()

    def expect_code(code, call):
        try:
            call()
        except grpc.RpcError as error:
            expect(error.code() == code, f"{error.code()} {error.details()}, expected {code}")
            return error
        raise AssertionError(f"no error, expected {code}")

    def create_and_publish():
        snapshot = orders.CreateOrder(pb.CreateOrderRequest(order_id=order_id, eta_display="20 min"), metadata=alice, timeout=10)
        expect(snapshot.status == pb.ORDER_STATUS_RECEIVED and snapshot.customer_id == "alice", f"{snapshot}")
        state["start"] = snapshot.latest_update_id
        requests = [
            pb.PublishUpdateRequest(order_id=order_id, status_changed=pb.StatusChanged(status=pb.ORDER_STATUS_PREPARING)),
            pb.PublishUpdateRequest(order_id=order_id, eta_changed=pb.EtaChanged(eta_display="15 min")),
            pb.PublishUpdateRequest(order_id=order_id, courier_moved=pb.CourierMoved(latitude=52.52, longitude=13.4)),
            pb.PublishUpdateRequest(order_id=order_id, timeline_event=pb.TimelineEvent(id="t1", title="Picked up")),
        ]
        state["published"] = [orders.PublishUpdate(request, metadata=alice, timeout=10) for request in requests]
        ids = [update.update_id for update in state["published"]]
        expect(len(set(ids)) == 4 and all(ids), f"{ids}")
        snapshot = orders.GetOrder(pb.GetOrderRequest(order_id=order_id), metadata=alice, timeout=10)
        expect(snapshot.status == pb.ORDER_STATUS_PREPARING and snapshot.eta_display == "15 min", f"{snapshot}")
        expect([event.title for event in snapshot.timeline] == ["Picked up"], f"{snapshot.timeline}")
        expect(snapshot.latest_update_id == ids[-1], "latest_update_id")

    def watch_and_resume():
        ids = [update.update_id for update in state["published"]]
        stream = orders.WatchOrder(pb.WatchOrderRequest(order_id=order_id, since_update_id=state["start"]), metadata=alice, timeout=10)
        seen = []
        for update in stream:
            seen.append(update)
            if len(seen) == 4:
                stream.cancel()
                break
        expect([u.update_id for u in seen] == ids, "from the start")
        expect([u.WhichOneof("event") for u in seen] == ["status_changed", "eta_changed", "courier_moved", "timeline_event"], "kinds")
        stream = orders.WatchOrder(pb.WatchOrderRequest(order_id=order_id, since_update_id=ids[1]), metadata=alice, timeout=10)
        resumed = []
        for update in stream:
            resumed.append(update.update_id)
            if len(resumed) == 2:
                stream.cancel()
                break
        expect(resumed == ids[2:], "resumed from the second")

    def errors():
        expect_code(grpc.StatusCode.UNAUTHENTICATED, lambda: orders.GetOrder(pb.GetOrderRequest(order_id=order_id), timeout=10))
        expect_code(grpc.StatusCode.PERMISSION_DENIED,
                    lambda: orders.GetOrder(pb.GetOrderRequest(order_id=order_id), metadata=bob, timeout=10))
        expect_code(grpc.StatusCode.NOT_FOUND, lambda: orders.GetOrder(pb.GetOrderRequest(order_id="nope"), metadata=alice, timeout=10))
        expect_code(grpc.StatusCode.INVALID_ARGUMENT, lambda: list(orders.WatchOrder(
            pb.WatchOrderRequest(order_id=order_id, since_update_id="not-a-token"), metadata=alice, timeout=10)))

    def follow_with_include():
        requests = queue.Queue()
        requests.put(pb.FollowOrderRequest(order_id=order_id, since_update_id=state["start"], include=[pb.EVENT_KIND_TIMELINE]))

        def request_stream():
            while (request := requests.get()) is not None:
                yield request

        stream = orders.FollowOrder(request_stream(), metadata=alice, timeout=10)
        try:
            first = next(stream)
        finally:
            requests.put(None)
        expect(first.WhichOneof("event") == "timeline_event" and first.update_id == state["published"][3].update_id, f"{first}")

    def chat_round():
        room = f"py-{uuid.uuid4().hex[:6]}"
        requests = queue.Queue()
        requests.put(chat_pb.ChatRequest(join=chat_pb.Join(room=room, nickname="py")))
        requests.put(chat_pb.ChatRequest(send=chat_pb.Send(text="hello from grpcio")))

        def request_stream():
            while (request := requests.get()) is not None:
                yield request

        events = chat.Chat(request_stream(), timeout=10)
        try:
            joined = next(events)
            expect(joined.WhichOneof("event") == "joined" and list(joined.joined.participants) == ["py"], f"{joined}")
            message = next(events)
            expect(message.message.text == "hello from grpcio" and message.message.id == 1 and message.message.nickname == "py",
                   f"{message}")
        finally:
            requests.put(None)

    checks.check("create an order and publish every kind of update", create_and_publish)
    checks.check("watch from the start, resume from the middle", watch_and_resume)
    checks.check("UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, INVALID_ARGUMENT", errors)
    checks.check("FollowOrder with include = [TIMELINE]", follow_with_include)
    checks.check("chat: join, send, receive", chat_round)
    checks.report_and_exit()


if __name__ == "__main__":
    main()
