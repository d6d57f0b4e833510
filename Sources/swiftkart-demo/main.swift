// Until the SwiftKart server exists, `make run` shows the protobuf layer on the session's
// schema: a race schedule built, encoded, decoded, and printed as JSON.
import PitlaneProtobuf

// The race as the session builds it (seeds/000, 9:41).
var duckPondDash = Race()
duckPondDash.name = "Duck Pond Dash"
duckPondDash.location = "Apple Park, Cupertino"
duckPondDash.startTime = .init(roundingTimeIntervalSince1970: 1_781_198_600)
duckPondDash.laps = 6
duckPondDash.championship = "Corporate Cup"
duckPondDash.drivers = ["Monty", "Pepper", "Mycroft", "Pancakes", "Duke", "Kiko", "Sissi", "Bo"]
let response = ListRacesResponse.with { $0.races = [duckPondDash] }

let bytes = try response.serializedBytes()
let decoded = try ListRacesResponse(serializedBytes: bytes)
precondition(decoded == response, "binary round trip changed the message")

print("ListRacesRequest().limit = \(ListRacesRequest().limit)  (edition 2024 default)")
print("ListRacesResponse: \(bytes.count) bytes in protobuf binary")
print("as JSON: \(try decoded.jsonString())")
