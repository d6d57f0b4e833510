// gRPC C++'s side of the gRPC benchmark: Debian's libgrpc++ serving bench.v1.Bench on
// 127.0.0.1 through the callback API (the API gRPC recommends for new C++ servers).
//
// Usage: grpc_bench_server [--port N] [--max-streams N]
// Prints "listening PORT" once serving (port 0, the default, picks a free port), serves until
// killed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "bench.grpc.pb.h"

namespace {

using bench::v1::Payload;

// Each reactor owns one RPC's state and deletes itself in OnDone, the callback API's last word
// on an RPC. Only one read and one write are ever in flight, so a single Payload per reactor
// suffices and memory stays flat however fast the peer reads.
class Bench final : public bench::v1::Bench::CallbackService {
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context, const Payload* request,
                                  Payload* response) override {
    *response = *request;
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  // Sends request.seq() messages, the next one as soon as the previous write completes, which
  // is as fast as flow control lets the transport take them.
  class Streamer final : public grpc::ServerWriteReactor<Payload> {
   public:
    explicit Streamer(const Payload& request) : message_(request), total_(request.seq()) { Next(); }

   private:
    void Next() {
      if (sent_ >= total_) {
        Finish(grpc::Status::OK);
        return;
      }
      message_.set_seq(sent_++);
      StartWrite(&message_);
    }
    void OnWriteDone(bool ok) override {
      // Not ok: the client went away (the bench client cancels an endless stream).
      if (ok) {
        Next();
      } else {
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "stream ended by the client"));
      }
    }
    void OnDone() override { delete this; }

    Payload message_;
    const int64_t total_;
    int64_t sent_ = 0;
  };

  grpc::ServerWriteReactor<Payload>* ServerStream(grpc::CallbackServerContext*,
                                                  const Payload* request) override {
    return new Streamer(*request);
  }

  // Echoes each message: read one, write it back, read the next.
  class Echo final : public grpc::ServerBidiReactor<Payload, Payload> {
   public:
    Echo() { StartRead(&message_); }

   private:
    void OnReadDone(bool ok) override {
      // Not ok: the client half-closed (or went away); the echo is complete.
      if (ok) {
        StartWrite(&message_);
      } else {
        Finish(grpc::Status::OK);
      }
    }
    void OnWriteDone(bool ok) override {
      if (ok) {
        StartRead(&message_);
      } else {
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "stream ended by the client"));
      }
    }
    void OnDone() override { delete this; }

    Payload message_;
  };

  grpc::ServerBidiReactor<Payload, Payload>* PingPong(grpc::CallbackServerContext*) override {
    return new Echo();
  }
};

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: grpc_bench_server [--port N] [--max-streams N]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  int max_streams = 0;  // 0: gRPC's default (no limit advertised)
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) usage();
    if (std::strcmp(argv[i], "--port") == 0) {
      port = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--max-streams") == 0) {
      max_streams = std::atoi(argv[i + 1]);
    } else {
      usage();
    }
  }

  Bench service;
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), grpc::InsecureServerCredentials(),
                           &bound);
  if (max_streams > 0) builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, max_streams);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound == 0) {
    std::fprintf(stderr, "grpc_bench_server: could not listen on 127.0.0.1:%d\n", port);
    return 1;
  }
  std::printf("listening %d\n", bound);
  std::fflush(stdout);  // the harness reads this line through a pipe
  server->Wait();
}
