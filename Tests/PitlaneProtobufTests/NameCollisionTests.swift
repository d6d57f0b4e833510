import PitlaneProtobuf
import Testing

/// `collisions.proto`: names that collide once they are Swift names compile, and the values
/// behind them keep their own wire numbers and JSON names.
@Suite("Generated names that would collide", .timeLimit(.minutes(1)))
struct NameCollisionTests {
    typealias Collided = Pitlane_Test_Collisions_Type
    typealias Aliased = Pitlane_Test_Collisions_Aliased
    typealias Members = Pitlane_Test_Collisions_Members

    @Test("enum aliases: one Swift name each, the first alias wins, every proto name parses")
    func aliases() throws {
        #expect(Aliased.aliasBaz.rawValue == 2)
        #expect(Aliased.moo == .aliasBaz)
        #expect(Aliased.bAz == .aliasBaz)
        for name in ["ALIAS_BAZ", "MOO", "moo", "bAz"] {
            #expect(Aliased(protoName: name) == .aliasBaz)
        }
        #expect(Collided().aliased == .aliasBaz)  // [default = moo]
        let parsed = try Collided(jsonString: #"{"aliased": "bAz"}"#)
        #expect(parsed.aliased == .aliasBaz && parsed.hasAliased)
        #expect(try parsed.jsonString() == #"{"aliased":"ALIAS_BAZ"}"#)
    }

    @Test("enum values named like the enum's members or keywords, and values that differ in case")
    func enumMembers() {
        let values: [Members] = [.rawValue_p, .allCases_p, .self_p, .type, .default, .protoName_p, .fooBar, .fooBar_p]
        #expect(values.map(\.rawValue) == Array(0...7))
        #expect(Members.allCases.count == 8)
        #expect(Members.fooBar_p.protoName == "FooBar")
    }

    @Test("fields named like members, accessors, keywords and their own oneof round-trip")
    func fields() throws {
        var message = Collided()
        message.self_p = 1
        message.description_p = "two"
        message.debugDescription_p = 3
        message.unknownFields_p = 4
        message.isInitialized_p = 5
        message.foo = 6
        message.hasFoo_p = 7
        message.clearFoo_p = 8
        message.with_p = 9
        message.`class` = [10, 11]
        message.members = .type
        message.kindChoice = 13
        message.otherMessage = .with { $0.value = 15 }
        message.fooBar = 16
        message.fooBar_p = 18
        message.`protocol` = 19
        message.extensions_p = 20
        message.textFormatString_p = 21
        #expect(message.kindChoice_p == .kindChoice(13))
        #expect(message.hasFoo && message.hasHasFoo_p)
        message.clearFoo()
        #expect(!message.hasFoo && message.hasClearFoo_p)
        message.foo = 6

        let decoded = try Collided(serializedBytes: message.serializedBytes())
        #expect(decoded == message)
        let json = try message.jsonString()
        #expect(json.contains(#""self":1"#) && json.contains(#""fooBar":16"#) && json.contains(#""FooBar":18"#))
        #expect(try Collided(jsonString: json) == message)

        let outer = Pitlane_Test_Collisions_Message.with {
            $0.type = message
            $0.string = .with { $0.string = "s" }
            $0.nestedType = .with { $0.value = 3 }
            $0.nestedSelf = .with { $0.value = 4 }
        }
        #expect(try Pitlane_Test_Collisions_Message(serializedBytes: outer.serializedBytes()) == outer)
    }

    @Test("Extension constants named like `all`, like each other, or like a message's static members")
    func extensionNames() throws {
        typealias Extensions = Pitlane_Test_Collisions_CollisionsExtensions
        var message = Collided()
        message[extension: Extensions.all_p] = 1
        message[extension: Extensions.fooBar] = 2
        message[extension: Extensions.fooBar_p] = 3
        message[extension: Pitlane_Test_Collisions_Message.protoMessageName_p] = 4
        #expect(Extensions.all.count == 4)
        let decoded = try Collided(serializedBytes: message.serializedBytes())
        #expect(decoded[extension: Extensions.fooBar_p] == 3 && decoded[extension: Pitlane_Test_Collisions_Message.protoMessageName_p] == 4)
    }

    @Test(
        "Oneofs whose names camel-case alike, nested types named like a oneof enum or `Hasher`, a field named `_`, a file name with a hyphen"
    )
    func typeNames() throws {
        var choices = Pitlane_Test_Collisions_Choices()
        choices.fooBar = .first(1)
        choices.fooBar_p = .second(2)
        choices.field3 = 3
        let oneofs: (Pitlane_Test_Collisions_Choices.OneOf_FooBar?, Pitlane_Test_Collisions_Choices.OneOf_FooBar_p?) = (
            choices.fooBar, choices.fooBar_p
        )
        #expect(oneofs.0 == .first(1) && oneofs.1 == .second(2))
        #expect(try Pitlane_Test_Collisions_Choices(serializedBytes: choices.serializedBytes()) == choices)

        var message = Collided()
        message.hasher = .with { $0.value = 5 }
        message.kindChoice_p = .other("x")
        let nested: [any Message.Type] = [Collided.OneOf_KindChoice.self, Collided.HasherMessage.self]
        #expect(nested.count == 2)
        let decoded = try Collided(serializedBytes: message.serializedBytes())
        #expect(decoded == message && decoded.hashValue == message.hashValue)

        message[extension: Pitlane_Test_Collisions_NameClashExtensions.fromHyphenatedFile] = 7
        #expect(
            try Collided(serializedBytes: message.serializedBytes())[
                extension: Pitlane_Test_Collisions_NameClashExtensions.fromHyphenatedFile] == 7)
    }
}
