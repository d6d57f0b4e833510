// PitlaneHTTP2: gRPC over HTTP/2 on libnghttp2 and zlib, on PitlanePosix's event loops,
// sockets and TLS. Its API names PitlanePosix's types (SocketAddress, TLSError, EventLoop),
// so importing PitlaneHTTP2 brings them.
@_exported import PitlanePosix
