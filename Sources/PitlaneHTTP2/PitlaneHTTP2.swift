// PitlaneHTTP2: gRPC over HTTP/2 on libnghttp2, OpenSSL and epoll event loops.
// The event loop and sockets live in EventLoop/ and Sockets/; the HTTP/2 connections,
// TLS and the client and server transports build on them.
