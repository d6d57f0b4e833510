import PitlaneCore

/// What only the loop's thread touches: registered descriptors and timers.
///
/// `@unchecked Sendable`: the loop object, and with it this state, is shared across threads,
/// but every access happens on the loop thread. `EventLoop.run()` runs only there, and every
/// other method that reaches this state (`register`, `setInterest`, `deregister`,
/// `scheduleTimer`, `cancelTimer`) first checks `preconditionInEventLoop()`. One thread, so
/// no concurrent access.
final class LoopState: @unchecked Sendable {
    struct Registration {
        let handler: any FileDescriptorHandler
        var readable: Bool
        var writable: Bool
        /// Distinguishes this registration from an earlier one of the same descriptor number,
        /// whose events may still sit in the current `epoll_wait` batch.
        let generation: UInt32
    }

    var registrations: [Int32: Registration] = [:]
    /// Where the loop's connections read into: bytes read are handed on (to nghttp2, to
    /// TLS) before the read returns, so one buffer serves every connection of the loop, and
    /// an idle connection holds none.
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    var timers = TimerHeap()
    /// On a manual clock: the timers armed there (their tasks wait in `timers`, out of its heap).
    var manualTimers: [EventLoop.TimerID: ScheduledTimer] = [:]
    /// The array `runQueuedTasks` runs the inbox's tasks from, kept empty between rounds.
    var taskBatch: [LoopTask] = []
    /// How long the loop polls before it sleeps; set before the loop's thread starts.
    var idlePolling = IdlePolling(limit: .zero)
    /// Generation 0 is the inbox's eventfd, so registrations start at 1.
    private var lastGeneration: UInt32 = 0

    deinit {
        readBuffer.deallocate()
    }

    func makeGeneration() -> UInt32 {
        lastGeneration &+= 1
        if lastGeneration == 0 { lastGeneration = 1 }
        return lastGeneration
    }
}

extension LoopState.Registration {
    /// The `epoll_event.data` word: the generation above the descriptor.
    static func key(fd: Int32, generation: UInt32) -> UInt64 {
        UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
    }

    static func split(key: UInt64) -> (fd: Int32, generation: UInt32) {
        (Int32(bitPattern: UInt32(truncatingIfNeeded: key)), UInt32(truncatingIfNeeded: key >> 32))
    }

    var eventMask: UInt32 {
        (readable ? Linux.epollIn : 0) | (writable ? Linux.epollOut : 0)
    }
}
