// One import for an app: the protobuf runtime, the gRPC core and the HTTP/2 transport.
//
//     import Pitlane
@_exported import PitlaneCore
@_exported import PitlaneHTTP2
@_exported import PitlaneProtobuf
