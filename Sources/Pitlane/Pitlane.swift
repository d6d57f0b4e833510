// One import for an app: the protobuf runtime, the gRPC core, the HTTP/2 transport and the web
// protocols beside it (a program that serves gRPC alone imports PitlaneHTTP2, and links no
// HTTP/1.1 or WebSocket library).
//
//     import Pitlane
@_exported import PitlaneCore
@_exported import PitlaneHTTP2
@_exported import PitlaneProtobuf
@_exported import PitlaneWeb
