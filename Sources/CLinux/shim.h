#ifndef PITLANE_CLINUX_SHIM_H
#define PITLANE_CLINUX_SHIM_H
// Linux calls Swift's Glibc module leaves out. epoll and eventfd come from their headers;
// accept4 and pthread_setname_np are declared by glibc only under _GNU_SOURCE, which would
// clash with the Glibc module's view of the same headers, so their prototypes are here.
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
int pthread_setname_np(pthread_t thread, const char *name);
#endif
