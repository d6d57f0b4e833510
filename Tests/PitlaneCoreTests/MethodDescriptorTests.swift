import PitlaneCore
import Testing

@Suite("Method descriptors from paths", .timeLimit(.minutes(1)))
struct MethodDescriptorTests {
    @Test("a path names a service and a method, with or without its leading slash")
    func parses() throws {
        let descriptor = try #require(MethodDescriptor(path: "/swiftkart.v1.SwiftKartService/FollowRace"))
        #expect(descriptor.service.fullyQualifiedService == "swiftkart.v1.SwiftKartService")
        #expect(descriptor.method == "FollowRace")
        #expect(descriptor.path == "/swiftkart.v1.SwiftKartService/FollowRace")
        #expect(MethodDescriptor(path: "a.B/C") == MethodDescriptor(fullyQualifiedService: "a.B", method: "C"))
        #expect(MethodDescriptor(path: "/ünï.Cödé/Mëthod")?.method == "Mëthod")
    }

    @Test(
        "a path without both parts, or with more, names no method",
        arguments: [
            "", "/", "//", "/a", "/a/", "//b", "/a/b/c", "a/b/", "/a//b",
        ])
    func rejects(path: String) {
        #expect(MethodDescriptor(path: path) == nil)
    }
}
