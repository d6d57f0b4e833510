import Testing

@testable import PitlaneCodeGen

/// How protobuf names become Swift names: the conventions Swift protobuf users know.
@Suite("Swift naming", .timeLimit(.minutes(1)))
struct SwiftNamingTests {
    @Test("packages prefix type names; standard type names get a suffix only without a package")
    func typeNames() {
        #expect(SwiftNaming.typePrefix(package: "orders.v1", swiftPrefix: nil) == "Orders_V1_")
        #expect(SwiftNaming.typePrefix(package: "", swiftPrefix: nil) == "")
        #expect(SwiftNaming.typePrefix(package: "orders.v1", swiftPrefix: "OV") == "OV")
        #expect(SwiftNaming.typeName("OrderUpdate", prefix: "Orders_V1_") == "Orders_V1_OrderUpdate")
        #expect(SwiftNaming.typeName("String", prefix: "") == "StringMessage")
        #expect(SwiftNaming.typeName("String", prefix: "Outer.") == "Outer.StringMessage")
        #expect(SwiftNaming.typeName("String", prefix: "Pkg_") == "Pkg_String")
    }

    @Test("fields: lower camel case with initialisms in capitals; keywords escaped")
    func fieldNames() {
        #expect(SwiftNaming.lowerCamelCase("since_update_id") == "sinceUpdateID")
        #expect(SwiftNaming.lowerCamelCase("url") == "url")
        #expect(SwiftNaming.lowerCamelCase("raceName") == "raceName")
        #expect(SwiftNaming.upperCamelCase("http_status") == "HTTPStatus")
        #expect(SwiftNaming.identifierWords("order-v2.beta") == "OrderV2Beta")
        #expect(SwiftNaming.escaped("class") == "`class`")
        #expect(SwiftNaming.escaped("text") == "text")
    }

    @Test("enum cases lose their enum's prefix, unless what is left starts with a digit or is empty")
    func enumCases() {
        #expect(SwiftNaming.enumCaseName("RACE_EVENT_TYPE_KART_LOCATIONS", enumName: "RaceEventType") == "kartLocations")
        #expect(SwiftNaming.enumCaseName("STATUS_UNSPECIFIED", enumName: "Status") == "unspecified")
        #expect(SwiftNaming.enumCaseName("SIZE_1X", enumName: "Size") == "size1x")
        #expect(SwiftNaming.enumCaseName("PENDING", enumName: "OrderState") == "pending")
    }

    @Test("string literals hold any text exactly")
    func literals() {
        #expect(SwiftNaming.stringLiteral("plain") == "\"plain\"")
        #expect(SwiftNaming.stringLiteral("a\"b\\c\n") == "\"a\\\"b\\\\c\\n\"")
    }
}
