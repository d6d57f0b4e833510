import CLinux
import Glibc

/// The Linux calls the event loop and sockets use beyond Glibc, through the CLinux shim.
enum Linux {
    static let epollIn = EPOLLIN.rawValue
    static let epollOut = EPOLLOUT.rawValue
    static let epollErr = EPOLLERR.rawValue
    static let epollHup = EPOLLHUP.rawValue

    /// `EPOLL_CTL_ADD`, `EPOLL_CTL_DEL`, `EPOLL_CTL_MOD`.
    enum EpollOperation: Int32 {
        case add = 1
        case delete = 2
        case modify = 3
    }

    static let epollEventStride = MemoryLayout<epoll_event>.stride
    /// `struct epoll_event` is packed on x86 (data at offset 4); elsewhere naturally aligned.
    static let epollEventDataOffset = MemoryLayout<epoll_event>.offset(of: \epoll_event.data)!

    static func epollCreate() -> Int32 {
        epoll_create1(Int32(EPOLL_CLOEXEC))
    }

    /// `epoll_ctl`; `events` and `data` fill the `epoll_event` (ignored by `EPOLL_CTL_DEL`).
    static func epollControl(
        _ epoll: Int32, _ operation: EpollOperation, _ fd: Int32, events: UInt32, data: UInt64
    ) -> Int32 {
        var event = epoll_event()
        event.events = events
        event.data.u64 = data
        return epoll_ctl(epoll, operation.rawValue, fd, &event)
    }

    static func epollWait(
        _ epoll: Int32, _ events: borrowing EpollEventBuffer, timeoutMilliseconds: Int32
    ) -> Int32 {
        epoll_wait(
            epoll, events.storage.baseAddress?.assumingMemoryBound(to: epoll_event.self),
            Int32(events.capacity), timeoutMilliseconds)
    }

    /// A non-blocking, close-on-exec eventfd with counter 0.
    static func eventFD() -> Int32 {
        eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
    }

    /// `accept4(fd, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC)`, so the accepted socket is
    /// never blocking or inherited across exec, without a window between two calls.
    static func acceptNonBlocking(
        _ fd: Int32,
        _ address: UnsafeMutablePointer<sockaddr>?,
        _ length: UnsafeMutablePointer<socklen_t>?
    ) -> Int32 {
        accept4(fd, address.map(UnsafeMutableRawPointer.init), length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
    }

    /// Names the calling thread (shown by `top -H`, gdb, perf); the kernel keeps 15 bytes.
    static func setCurrentThreadName(_ name: String) {
        _ = pthread_setname_np(pthread_self(), String(decoding: name.utf8.prefix(15), as: UTF8.self))
    }
}

/// Memory for the events one `epoll_wait` returns, read with the layout `Linux` describes.
struct EpollEventBuffer: ~Copyable {
    let capacity: Int
    fileprivate let storage: UnsafeMutableRawBufferPointer

    init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(byteCount: capacity * Linux.epollEventStride, alignment: 8)
    }

    deinit { storage.deallocate() }

    subscript(index: Int) -> (events: UInt32, data: UInt64) {
        let offset = index * Linux.epollEventStride
        return (
            storage.loadUnaligned(fromByteOffset: offset, as: UInt32.self),
            storage.loadUnaligned(fromByteOffset: offset + Linux.epollEventDataOffset, as: UInt64.self)
        )
    }
}
