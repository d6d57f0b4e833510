#!/usr/bin/env python3
"""A TLS client made with Python's ssl module, for what grpcio will not do: offer ALPN
protocols other than h2, or none.

  tls_probe.py --port N --ca PEM --alpn LIST
      Connects to 127.0.0.1:N, trusting the CA in PEM and expecting the name "localhost",
      offers the comma-separated ALPN protocols in LIST ("none" offers no ALPN at all), and
      prints "accepted PROTOCOL" once the handshake completes and the server keeps the
      connection (it sends its HTTP/2 SETTINGS or waits), or "rejected: REASON" when the
      handshake fails or the server closes the connection.
"""
import argparse
import socket
import ssl


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--alpn", required=True)
    args = parser.parse_args()

    context = ssl.create_default_context(cafile=args.ca)
    if args.alpn != "none":
        context.set_alpn_protocols(args.alpn.split(","))
    try:
        with socket.create_connection(("127.0.0.1", args.port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                # TLS 1.3 servers may reject after the client's handshake ends: read to learn.
                tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
                first = tls.recv(9)
                if not first:
                    print("rejected: the server closed the connection")
                else:
                    print(f"accepted {tls.selected_alpn_protocol()}")
    except (ssl.SSLError, ConnectionError) as error:
        print(f"rejected: {error}")


if __name__ == "__main__":
    main()
