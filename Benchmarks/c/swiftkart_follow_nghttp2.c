// A SwiftKart follower load driver on nghttp2's client session alone (Debian's libnghttp2), with
// no gRPC runtime: HTTP/2 framing by nghttp2, the 5-byte gRPC envelope and the few protobuf
// fields it reads (the first kart's `recorded_at`) by hand. It costs about a microsecond per
// message where a full gRPC client costs ten or more, so it measures what one server core holds
// when no full client on the other core can receive that many messages: a load generator like
// h2load, for a stream h2load cannot time. The same steps and JSON lines as swiftkart-load.
//
// Usage: swiftkart_follow_nghttp2 --port N --server-pid P [--steps 1000,2500,5000,10000]
//                                 [--connections 10] [--seconds 3] [--race NAME] [--method WatchRace]
// Adds followers of one race step by step (FollowRace, kart locations only, the request written
// once and the stream left open; or WatchRace, the request stream ended after it), spread over `connections` HTTP/2 connections served by one
// epoll loop. After each step it measures, for `seconds`: the delay from each locations event's
// `recorded_at` to its arrival (p50, p99), messages per second, the server's RSS and both
// processes' CPU.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kBuckets = 2001 };  // whole milliseconds; the last holds >= 2 s

// Delays in milliseconds; one thread, so plain counters.
static struct {
    bool measuring;
    long first_events;
    long buckets[kBuckets];
} histogram;

// One follower's stream: where it is in the current gRPC message, and the message's first bytes
// (enough to reach the first kart's timestamp) once they have arrived.
typedef struct {
    uint8_t prefix[5];
    uint32_t prefix_have;
    uint32_t body_left;
    uint8_t head[128];
    uint32_t head_have;
    bool seen_first;
} Follower;

typedef struct {
    int fd;
    nghttp2_session *session;
} Connection;

static long ended_streams;
static const char *error_status;  // the first grpc-status other than 0 a follower got

static long now_milliseconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_REALTIME, &time);
    return time.tv_sec * 1000L + time.tv_nsec / 1000000L;
}

static double monotonic_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return time.tv_sec + time.tv_nsec / 1e9;
}

static long resident_kib(long pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *file = fopen(path, "r");
    if (file == NULL) return 0;
    char line[256];
    long kib = 0;
    while (fgets(line, sizeof line, file) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) kib = atol(line + 6);
    }
    fclose(file);
    return kib;
}

// CPU seconds (user + system) a process has used: fields 14 and 15 of /proc/PID/stat.
static double cpu_seconds(long pid) {
    char path[64], line[1024] = {0};
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *file = fopen(path, "r");
    if (file == NULL) return 0;
    const bool read = fgets(line, sizeof line, file) != NULL;
    fclose(file);
    const char *rest = read ? strrchr(line, ')') : NULL;
    if (rest == NULL) return 0;
    unsigned long utime = 0, stime = 0;
    // After ") ": state (3), then fields 4-13, then utime (14) and stime (15).
    if (sscanf(rest + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) return 0;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

// A varint at *cursor, or false past `end`.
static bool read_varint(const uint8_t **cursor, const uint8_t *end, uint64_t *value) {
    *value = 0;
    for (int shift = 0; shift < 64 && *cursor < end; shift += 7) {
        const uint8_t byte = *(*cursor)++;
        *value |= (uint64_t)(byte & 0x7f) << shift;
        if (byte < 0x80) return true;
    }
    return false;
}

// Finds field `number` of wire type LEN in [*start, *end) and narrows the range to its bytes.
static bool find_length_delimited(const uint8_t **start, const uint8_t **end, uint32_t number) {
    const uint8_t *cursor = *start;
    uint64_t tag, value;
    while (cursor < *end && read_varint(&cursor, *end, &tag)) {
        switch (tag & 7) {
        case 0:
            if (!read_varint(&cursor, *end, &value)) return false;
            break;
        case 1: cursor += 8; break;
        case 5: cursor += 4; break;
        case 2:
            if (!read_varint(&cursor, *end, &value)) return false;
            if ((tag >> 3) == number) {
                *start = cursor;
                // A field longer than the bytes kept is cut at them: the timestamp comes first.
                if (value < (uint64_t)(*end - cursor)) *end = cursor + value;
                return true;
            }
            cursor += value;
            break;
        default: return false;
        }
    }
    return false;
}

// A whole FollowRaceResponse's first bytes: the first kart's recorded_at, if it is a locations event.
static void on_message(Follower *follower) {
    const uint8_t *start = follower->head, *end = follower->head + follower->head_have;
    // FollowRaceResponse.locations (1) -> KartLocations.karts (1) -> Kart.recorded_at (4).
    if (!find_length_delimited(&start, &end, 1) || !find_length_delimited(&start, &end, 1) ||
        !find_length_delimited(&start, &end, 4)) {
        return;
    }
    uint64_t tag, seconds = 0, nanos = 0, value;
    while (start < end && read_varint(&start, end, &tag) && (tag & 7) == 0 && read_varint(&start, end, &value)) {
        if (tag >> 3 == 1) seconds = value;
        if (tag >> 3 == 2) nanos = value;
    }
    if (!follower->seen_first) {
        follower->seen_first = true;
        histogram.first_events += 1;
    }
    if (!histogram.measuring) return;
    long delay = now_milliseconds() - ((long)seconds * 1000L + (long)nanos / 1000000L);
    histogram.buckets[delay < 0 ? 0 : (delay >= kBuckets ? kBuckets - 1 : delay)] += 1;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                         size_t length, void *user_data) {
    (void)flags, (void)user_data;
    Follower *follower = nghttp2_session_get_stream_user_data(session, stream_id);
    if (follower == NULL) return 0;
    while (length > 0) {
        if (follower->prefix_have < 5) {
            const size_t take = length < 5 - follower->prefix_have ? length : 5 - follower->prefix_have;
            memcpy(follower->prefix + follower->prefix_have, data, take);
            follower->prefix_have += take, data += take, length -= take;
            if (follower->prefix_have < 5) break;
            const uint8_t *p = follower->prefix;
            follower->body_left = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
            follower->head_have = 0;
        } else {
            const size_t take = length < follower->body_left ? length : follower->body_left;
            const size_t keep = sizeof follower->head - follower->head_have;
            memcpy(follower->head + follower->head_have, data, take < keep ? take : keep);
            follower->head_have += take < keep ? take : keep;
            follower->body_left -= take, data += take, length -= take;
        }
        if (follower->prefix_have == 5 && follower->body_left == 0) {
            if (follower->prefix[0] == 0) on_message(follower);  // uncompressed: none was asked for
            follower->prefix_have = 0;
        }
    }
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t name_length,
                     const uint8_t *value, size_t value_length, uint8_t flags, void *user_data) {
    (void)session, (void)frame, (void)flags, (void)user_data;
    if (name_length == 11 && memcmp(name, "grpc-status", 11) == 0 && !(value_length == 1 && value[0] == '0') &&
        error_status == NULL) {
        error_status = strndup((const char *)value, value_length);
    }
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data) {
    (void)error_code, (void)user_data;
    free(nghttp2_session_get_stream_user_data(session, stream_id));
    ended_streams += 1;
    return 0;
}

static ssize_t send_bytes(nghttp2_session *session, const uint8_t *data, size_t length, int flags,
                                void *user_data) {
    (void)session, (void)flags;
    const ssize_t sent = send(((Connection *)user_data)->fd, data, length, MSG_NOSIGNAL);
    if (sent >= 0) return sent;
    return errno == EAGAIN || errno == EWOULDBLOCK ? NGHTTP2_ERR_WOULDBLOCK : NGHTTP2_ERR_CALLBACK_FAILURE;
}

// The request message, framed: written once per follower, the stream left open after it.
static uint8_t request[5 + 256];
static size_t request_length;
static const char *method = "FollowRace";

static ssize_t read_request(nghttp2_session *session, int32_t stream_id, uint8_t *buffer, size_t length,
                                  uint32_t *flags, nghttp2_data_source *source, void *user_data) {
    (void)session, (void)stream_id, (void)source, (void)user_data;
    if (length < request_length) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    memcpy(buffer, request, request_length);
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (strcmp(method, "FollowRace") == 0) *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    return (ssize_t)request_length;
}

static void fail(const char *what) {
    fprintf(stderr, "swiftkart_follow_nghttp2: %s: %s\n", what, strerror(errno));
    exit(1);
}

static Connection *connect_to(int port, int epoll) {
    Connection *connection = calloc(1, sizeof *connection);
    connection->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (connect(connection->fd, (struct sockaddr *)&address, sizeof address) < 0 && errno != EINPROGRESS) {
        fail("connect");
    }
    const int one = 1;
    setsockopt(connection->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event event = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = connection};
    if (epoll_ctl(epoll, EPOLL_CTL_ADD, connection->fd, &event) < 0) fail("epoll_ctl");

    nghttp2_session_callbacks *callbacks;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_send_callback(callbacks, send_bytes);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
    nghttp2_session_client_new(&connection->session, callbacks, connection);
    nghttp2_session_callbacks_del(callbacks);
    // Windows large enough that flow control never holds the server back.
    const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
                                               {NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
    nghttp2_submit_settings(connection->session, NGHTTP2_FLAG_NONE, settings, 2);
    nghttp2_session_set_local_window_size(connection->session, NGHTTP2_FLAG_NONE, 0, 1 << 30);
    return connection;
}

static void add_follower(Connection *connection, const char *authority, const char *path) {
#define HEADER(name, value) \
    {(uint8_t *)(name), (uint8_t *)(value), sizeof(name) - 1, strlen(value), NGHTTP2_NV_FLAG_NO_COPY_NAME}
    const nghttp2_nv headers[] = {HEADER(":method", "POST"), HEADER(":scheme", "http"),
                                  HEADER(":authority", authority), HEADER(":path", path),
                                  HEADER("content-type", "application/grpc"), HEADER("te", "trailers")};
#undef HEADER
    nghttp2_data_provider body = {.source = {.ptr = NULL}, .read_callback = read_request};
    Follower *follower = calloc(1, sizeof *follower);
    if (nghttp2_submit_request(connection->session, NULL, headers, sizeof headers / sizeof headers[0], &body,
                                follower) < 0) {
        fprintf(stderr, "swiftkart_follow_nghttp2: could not submit a request\n");
        exit(1);
    }
}

// Reads and writes every connection that is ready, for at most `seconds`.
static void run_for(double seconds, int epoll, Connection **connections, int count) {
    static uint8_t buffer[1 << 16];
    const double until = monotonic_seconds() + seconds;
    for (;;) {
        for (int i = 0; i < count; ++i) {
            if (nghttp2_session_send(connections[i]->session) != 0) {
                fprintf(stderr, "swiftkart_follow_nghttp2: connection %d failed to send\n", i);
                exit(1);
            }
        }
        const double left = until - monotonic_seconds();
        if (left <= 0) return;
        struct epoll_event events[64];
        const int ready = epoll_wait(epoll, events, 64, left < 0.01 ? 1 : 10);
        for (int i = 0; i < ready; ++i) {
            Connection *connection = events[i].data.ptr;
            for (;;) {
                const ssize_t got = recv(connection->fd, buffer, sizeof buffer, 0);
                if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
                if (got <= 0) {
                    fprintf(stderr, "swiftkart_follow_nghttp2: the server closed a connection\n");
                    exit(1);
                }
                if (nghttp2_session_mem_recv(connection->session, buffer, (size_t)got) < 0) {
                    fprintf(stderr, "swiftkart_follow_nghttp2: bad HTTP/2 from the server\n");
                    exit(1);
                }
            }
        }
    }
}

static void usage(void) {
    fprintf(stderr, "usage: swiftkart_follow_nghttp2 --port N --server-pid P [--steps 1000,2500,5000,10000] "
                    "[--connections 10] [--seconds 3] [--race NAME] [--method FollowRace|WatchRace]\n");
    exit(2);
}

int main(int argc, char **argv) {
    int port = 0, connection_count = 10, steps[16], step_count = 0;
    long server_pid = 0;
    double seconds = 3;
    const char *race = "Zuera Finale", *step_list = "1000,2500,5000,10000";
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) usage();
        if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--server-pid") == 0) server_pid = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--connections") == 0) connection_count = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0) seconds = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--race") == 0) race = argv[i + 1];
        else if (strcmp(argv[i], "--steps") == 0) step_list = argv[i + 1];
        else if (strcmp(argv[i], "--method") == 0) method = argv[i + 1];
        else usage();
    }
    for (const char *cursor = step_list; *cursor != 0 && step_count < 16;) {
        steps[step_count++] = atoi(cursor);
        cursor += strcspn(cursor, ",");
        cursor += *cursor == ',';
    }
    const size_t race_length = strlen(race);
    if (port <= 0 || connection_count < 1 || seconds <= 0 || step_count == 0 || race_length > 200 ||
        (strcmp(method, "FollowRace") != 0 && strcmp(method, "WatchRace") != 0)) {
        usage();
    }
    char path[64];
    snprintf(path, sizeof path, "/SwiftKartService/%s", method);

    // FollowRaceRequest { race_name = 1: race, event_types = 2: [KART_LOCATIONS], packed }.
    uint8_t *message = request + 5;
    size_t length = 0;
    message[length++] = 0x0a, message[length++] = (uint8_t)race_length;
    memcpy(message + length, race, race_length), length += race_length;
    message[length++] = 0x12, message[length++] = 1, message[length++] = 1;
    request[0] = 0, request[1] = request[2] = request[3] = 0, request[4] = (uint8_t)length;
    request_length = 5 + length;

    char authority[32];
    snprintf(authority, sizeof authority, "127.0.0.1:%d", port);
    const int epoll = epoll_create1(0);
    Connection **connections = calloc((size_t)connection_count, sizeof *connections);
    for (int i = 0; i < connection_count; ++i) connections[i] = connect_to(port, epoll);

    const long baseline_kib = resident_kib(server_pid);
    long started = 0;
    for (int s = 0; s < step_count; ++s) {
        const int target = steps[s];
        for (; started < target; ++started) add_follower(connections[started % connection_count], authority, path);
        // Every follower has had an event (a bound on the wait, not a measurement).
        const double deadline = monotonic_seconds() + 60;
        while (histogram.first_events < target && monotonic_seconds() < deadline) {
            run_for(0.05, epoll, connections, connection_count);
        }
        run_for(1, epoll, connections, connection_count);  // let the ramp settle
        const double server_before = cpu_seconds(server_pid), load_before = cpu_seconds(getpid());
        const double window_start = monotonic_seconds();
        memset(histogram.buckets, 0, sizeof histogram.buckets);
        histogram.measuring = true;
        run_for(seconds, epoll, connections, connection_count);
        histogram.measuring = false;
        const double elapsed = monotonic_seconds() - window_start;
        long count = 0, p50 = -1, p99 = -1, seen = 0;
        for (int i = 0; i < kBuckets; ++i) count += histogram.buckets[i];
        for (int i = 0; i < kBuckets; ++i) {
            seen += histogram.buckets[i];
            if (p50 < 0 && seen >= 0.5 * count) p50 = i;
            if (p99 < 0 && seen >= 0.99 * count) p99 = i;
        }
        const long rss_kib = resident_kib(server_pid);
        printf("{\"followers\": %d, \"p50_ms\": %ld, \"p99_ms\": %ld, \"messages_per_s\": %ld, \"server_rss_kib\": %ld, "
               "\"kib_per_follower\": %.1f, \"server_cpu\": %.2f, \"load_cpu\": %.2f, \"driver\": \"nghttp2\"}\n",
               target, p50 < 0 ? kBuckets - 1 : p50, p99 < 0 ? kBuckets - 1 : p99, (long)(count / elapsed), rss_kib,
               (double)(rss_kib - baseline_kib) / target, (cpu_seconds(server_pid) - server_before) / elapsed,
               (cpu_seconds(getpid()) - load_before) / elapsed);
        fflush(stdout);
        if (ended_streams > 0) {
            fprintf(stderr, "swiftkart_follow_nghttp2: %ld followers' streams ended (grpc-status %s)\n", ended_streams,
                    error_status ? error_status : "0 or none");
        }
    }
    for (int i = 0; i < connection_count; ++i) close(connections[i]->fd);
    return 0;
}
