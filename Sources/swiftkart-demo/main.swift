// Until the SwiftKart server exists, `make run` shows the protobuf layer on the session's
// schema: a race schedule built, encoded, decoded, and printed as JSON.
import PitlaneProtobuf

let duckPondDash = Race.with {
    $0.name = "Duck Pond Dash"
    $0.location = "Apple Park"
    $0.startTime = .init(seconds: 1_780_000_000)
    $0.laps = 12
    $0.championship = "Cupertino Cup"
    $0.drivers = ["Swifty", "Tim", "Craig", "Federighi's Hair", "Ducky", "Mallard", "Quackers", "Puddles"]
}
let response = ListRacesResponse.with { $0.races = [duckPondDash] }

let bytes = try response.serializedBytes()
let decoded = try ListRacesResponse(serializedBytes: bytes)
precondition(decoded == response, "binary round trip changed the message")

print("ListRacesRequest().limit = \(ListRacesRequest().limit)  (edition 2024 default)")
print("ListRacesResponse: \(bytes.count) bytes in protobuf binary")
print("as JSON: \(try decoded.jsonString())")
