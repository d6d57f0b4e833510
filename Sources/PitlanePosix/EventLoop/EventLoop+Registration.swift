import Glibc

extension EventLoop {
    /// Starts watching `fd`, calling `handler` when it becomes readable or writable (as asked)
    /// and on error or hang-up, which epoll always reports. Loop thread only.
    ///
    /// Watching is level-triggered; see ``FileDescriptorHandler``. The loop keeps `handler`
    /// until ``deregister(_:)``, but does not own `fd`: deregister it before closing it.
    ///
    /// - Throws: ``EventLoopError/alreadyRegistered(_:)`` if `fd` is registered, or the
    ///   failed `epoll_ctl`.
    public func register(
        _ fd: Int32,
        handler: some FileDescriptorHandler,
        readable: Bool,
        writable: Bool
    ) throws(EventLoopError) {
        preconditionInEventLoop()
        let generation = state.makeGeneration()
        let registration = LoopState.Registration(
            handler: handler, readable: readable, writable: writable, generation: generation)
        let key = LoopState.Registration.key(fd: fd, generation: generation)
        // The kernel is asked first: an entry left in the table by a handler that closed its
        // descriptor without deregistering is stale (closing removed it from the epoll set),
        // and a new descriptor with the same number replaces it.
        guard Linux.epollControl(epollFD, .add, fd, events: registration.eventMask, data: key) == 0 else {
            let error = errno
            throw error == EEXIST ? .alreadyRegistered(fd) : .system("epoll_ctl", errno: error)
        }
        state.registrations[fd] = registration
    }

    /// Changes which readiness `fd` reports. Loop thread only.
    ///
    /// Turn writable interest on only while there are bytes waiting to be written: the watch
    /// is level-triggered, so an idle writable socket would wake the loop on every iteration.
    ///
    /// - Throws: ``EventLoopError/notRegistered(_:)``, or the failed `epoll_ctl`.
    public func setInterest(_ fd: Int32, readable: Bool, writable: Bool) throws(EventLoopError) {
        preconditionInEventLoop()
        guard var registration = state.registrations[fd] else { throw .notRegistered(fd) }
        guard registration.readable != readable || registration.writable != writable else { return }
        registration.readable = readable
        registration.writable = writable
        let key = LoopState.Registration.key(fd: fd, generation: registration.generation)
        guard Linux.epollControl(epollFD, .modify, fd, events: registration.eventMask, data: key) == 0 else {
            throw .system("epoll_ctl", errno: errno)
        }
        state.registrations[fd] = registration
    }

    /// Stops watching `fd` and releases its handler, which is never called again, even for
    /// events the current iteration has already received. Does nothing if `fd` is not
    /// registered. Loop thread only.
    public func deregister(_ fd: Int32) {
        preconditionInEventLoop()
        guard state.registrations.removeValue(forKey: fd) != nil else { return }
        // Fails only if `fd` was already closed, which took it out of the set anyway.
        _ = Linux.epollControl(epollFD, .delete, fd, events: 0, data: 0)
    }

    /// Calls handlers for `count` events of one `epoll_wait`.
    func dispatch(_ events: borrowing EpollEventBuffer, count: Int) {
        for index in 0..<count {
            let (flags, key) = events[index]
            let (fd, generation) = LoopState.Registration.split(key: key)
            if generation == 0 {
                inbox.consumeWakeUp()
                continue
            }
            // Looked up again before each call: the previous call may have deregistered this
            // or any other descriptor, or registered a new one under the same number.
            func current() -> LoopState.Registration? {
                guard let registration = state.registrations[fd], registration.generation == generation
                else { return nil }
                return registration
            }
            if flags & Linux.epollIn != 0, let registration = current(), registration.readable {
                registration.handler.readable()
            }
            if flags & Linux.epollOut != 0, let registration = current(), registration.writable {
                registration.handler.writable()
            }
            let failed = flags & (Linux.epollErr | Linux.epollHup) != 0
            guard failed, let registration = current() else { continue }
            // A handler still reading has bytes left, or the end of stream or the error itself
            // to read; it hears of the hang-up that way, and is called again next iteration.
            if flags & Linux.epollIn != 0 && registration.readable { continue }
            // Errors and hang-ups do not clear, and are reported whatever the interest: left
            // registered, the descriptor would wake every iteration.
            deregister(fd)
            registration.handler.errorOrHangUp()
        }
    }

    /// Deregisters every descriptor and calls its handler's `close()`.
    func closeAllHandlers() {
        // A close hook may deregister other descriptors, or register new ones.
        while !state.registrations.isEmpty {
            for (fd, registration) in state.registrations
            where state.registrations[fd]?.generation == registration.generation {
                deregister(fd)
                registration.handler.close()
            }
        }
    }
}
