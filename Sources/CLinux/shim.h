#ifndef PITLANE_CLINUX_SHIM_H
#define PITLANE_CLINUX_SHIM_H
// Linux calls Swift's Glibc module leaves out. epoll and eventfd come from their own headers.
// glibc declares accept4, pthread_setname_np and sched_getaffinity only under _GNU_SOURCE, and
// including their headers here would take their types away from the Glibc module, so the
// prototypes are written with the plain types they have on Linux (socklen_t and pthread_t are
// unsigned, pid_t is int, a cpu_set_t is a bit mask of bytes).
#include <sys/epoll.h>
#include <sys/eventfd.h>

int accept4(int fd, void *address, unsigned int *length, int flags);
int pthread_setname_np(unsigned long thread, const char *name);
int sched_getaffinity(int pid, unsigned long size, void *mask);
// The file actions are posix_spawn_file_actions_t, passed by address.
int posix_spawn_file_actions_addclosefrom_np(void *actions, int from);
#endif
