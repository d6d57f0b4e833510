import Glibc
import PitlanePosix
import TestSupport
import Testing

@Suite("EventLoop descriptors and shutdown", .timeLimit(.minutes(1)))
struct EventLoopRegistrationTests {
    /// Records its calls; when `deregisterOnRead` lists descriptors, deregisters them (itself
    /// included) on its first readable call. Loop-confined.
    private final class Recording: FileDescriptorHandler {
        let loop: EventLoop
        let name: String
        let calls: Locked<[String]>
        var deregisterOnRead: [Int32] = []

        init(loop: EventLoop, name: String, calls: Locked<[String]>) {
            self.loop = loop
            self.name = name
            self.calls = calls
        }

        func readable() {
            calls.withLock { $0.append("\(name).readable") }
            for fd in deregisterOnRead { loop.deregister(fd) }
        }

        func writable() { calls.withLock { $0.append("\(name).writable") } }
        func errorOrHangUp() { calls.withLock { $0.append("\(name).errorOrHangUp") } }

        func close() {
            calls.withLock { $0.append("\(name).close on loop: \(loop.inEventLoop)") }
            loop.execute { [calls] in calls.withLock { $0.append("task queued by close") } }
        }
    }

    @Test("a handler deregistered by another handler of the same batch is not called")
    func deregisteredWithinBatch() async throws {
        let loop = try EventLoop.start(name: "batch")
        defer { loop.shutdownGracefully() }
        let (first, second) = (try makeSocketPair(), try makeSocketPair())
        defer { for fd in [first.0, first.1, second.0, second.1] { close(fd) } }
        let calls = Locked<[String]>([])

        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            loop.execute {
                do {
                    for (fd, name) in [(first.0, "a"), (second.0, "b")] {
                        let handler = Recording(loop: loop, name: name, calls: calls)
                        handler.deregisterOnRead = [first.0, second.0]
                        try loop.register(fd, handler: handler, readable: true, writable: false)
                    }
                    // Both become readable before the loop next waits, so one epoll_wait
                    // returns both events.
                    var byte: UInt8 = 1
                    _ = write(first.1, &byte, 1)
                    _ = write(second.1, &byte, 1)
                    // Tasks run after the iteration's events: this one after the next
                    // iteration, the one that received the batch.
                    loop.execute { loop.execute { continuation.resume() } }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        #expect(calls.value == ["a.readable"] || calls.value == ["b.readable"])
    }

    @Test("registering a descriptor twice fails, and so does changing interest of an unknown one")
    func registrationErrors() async throws {
        let loop = try EventLoop.start(name: "register")
        defer { loop.shutdownGracefully() }
        let (fd, peer) = try makeSocketPair()
        defer {
            close(fd)
            close(peer)
        }
        let errors = try await loop.submit { () -> [EventLoopError?] in
            let handler = Recording(loop: loop, name: "x", calls: Locked([]))
            try loop.register(fd, handler: handler, readable: false, writable: false)
            defer { loop.deregister(fd) }
            var errors: [EventLoopError?] = []
            do throws(EventLoopError) {
                try loop.register(fd, handler: handler, readable: true, writable: false)
                errors.append(nil)
            } catch {
                errors.append(error)
            }
            do throws(EventLoopError) {
                try loop.setInterest(peer, readable: true, writable: false)
                errors.append(nil)
            } catch {
                errors.append(error)
            }
            return errors
        }
        #expect(errors == [.alreadyRegistered(fd), .notRegistered(peer)])
    }

    @Test("a hang-up reaches a handler that is not reading, once")
    func hangUp() async throws {
        let loop = try EventLoop.start(name: "hang-up")
        defer { loop.shutdownGracefully() }
        let (fd, peer) = try makeSocketPair()
        defer { close(fd) }
        let calls = Locked<[String]>([])

        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            loop.execute {
                do {
                    let handler = Recording(loop: loop, name: "x", calls: calls)
                    try loop.register(fd, handler: handler, readable: false, writable: false)
                } catch {
                    return continuation.resume(throwing: error)
                }
                close(peer)
                continuation.resume()
            }
        }
        try await eventually("the hang-up is reported") { !calls.value.isEmpty }
        // Level-triggered: left registered, the hang-up would be reported again in each of
        // these iterations.
        for _ in 0..<3 { try await loop.submit {} }
        #expect(calls.value == ["x.errorOrHangUp"])
    }

    @Test("shutdown runs queued tasks, closes handlers, ends the thread, then refuses work")
    func shutdown() async throws {
        let loop = try EventLoop.start(name: "shutdown")
        let (fd, peer) = try makeSocketPair()
        defer {
            close(fd)
            close(peer)
        }
        let calls = Locked<[String]>([])

        let thread = try await loop.submit { () -> String in
            let handler = Recording(loop: loop, name: "x", calls: calls)
            try loop.register(fd, handler: handler, readable: true, writable: false)
            return currentThreadProcPath()
        }
        loop.execute { calls.withLock { $0.append("queued before shutdown") } }
        loop.shutdownGracefully()

        #expect(calls.value == ["queued before shutdown", "x.close on loop: true", "task queued by close"])
        try await eventually("the loop's thread has ended") { threadHasEnded(thread) }
        #expect(!loop.inEventLoop)
        await #expect(throws: EventLoopError.shutDown) { try await loop.submit {} }
        loop.execute { calls.withLock { $0.append("after shutdown") } }
        loop.shutdownGracefully()
        #expect(calls.value.count == 3)
    }
}

/// `/proc/self/task/<tid>` of the calling thread.
private func currentThreadProcPath() -> String {
    var buffer = [CChar](repeating: 0, count: 64)
    let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
    precondition(count > 0, "no /proc/thread-self")
    return "/proc/" + String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Whether the thread at `path` has ended: its task entry is gone, or (in the instant between
/// `pthread_join` returning and the kernel unlisting the exiting thread) it is not sleeping,
/// as a live loop in `epoll_wait` would be.
private func threadHasEnded(_ path: String) -> Bool {
    guard let file = fopen("\(path)/stat", "r") else { return true }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 512)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return true }
    // "tid (name) state …": the state follows the parenthesised name.
    let stat = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard let nameEnd = stat.lastIndex(of: ")") else { return true }
    return stat[nameEnd...].dropFirst(2).first != "S"
}
