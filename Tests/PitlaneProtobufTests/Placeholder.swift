import PitlaneProtobuf
import Testing

@Test func limitDefault() { #expect(ListRacesRequest().limit == 100) }
