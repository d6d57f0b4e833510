// A probe for what each Swift task holds on its task allocator, for memory work on idle streams
// and followers (not used by any test or bench): LD_PRELOAD it into a server, and when the file
// /tmp/task-stack-probe-dump appears it writes /tmp/task-stack-probe.txt: for the live tasks,
// grouped by the bytes their stacks hold, one example's allocations in order, and the same for
// the deepest stack each task ever had (a task keeps the allocator slabs of that deepest stack,
// about 1 KiB each, until it ends). Each line is an allocation's size and the code address that
// asked for it (in Swift's async calling convention a caller allocates its callee's frame);
// scripts/task-stack-probe builds it, runs a server under it and names the addresses.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { kTasks = 1 << 16, kDepth = 64, kBuckets = 4096 };

typedef struct {
    void *task;
    int depth, peak_depth;
    size_t total, peak;  // bytes with the allocator's 16-byte header per allocation
    size_t sizes[kDepth], peak_sizes[kDepth];
    void *callers[kDepth], *peak_callers[kDepth];
} Task;

static Task *tasks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *(*real_alloc)(size_t);
static void (*real_dealloc)(void *);
static void *(*current_task)(void);

static size_t footprint(size_t size) { return ((size + 15) & ~(size_t)15) + 16; }

// The task's entry in an open-addressed table (never removed: the probe is for short runs).
static Task *entry(void *task, int create) {
    const size_t start = ((uintptr_t)task >> 4) * 2654435761u % kTasks;
    for (size_t i = 0; i < kTasks; ++i) {
        Task *t = &tasks[(start + i) % kTasks];
        if (t->task == task) return t;
        if (t->task == NULL) {
            if (!create) return NULL;
            t->task = task;
            return t;
        }
    }
    return NULL;
}

void *swift_task_alloc(size_t size) {
    void *pointer = real_alloc(size);
    void *task = current_task ? current_task() : NULL;
    if (task == NULL) return pointer;
    pthread_mutex_lock(&lock);
    Task *t = entry(task, 1);
    if (t != NULL) {
        if (t->depth < kDepth) {
            t->sizes[t->depth] = size;
            t->callers[t->depth] = __builtin_return_address(0);
        }
        t->depth += 1;
        t->total += footprint(size);
        if (t->total > t->peak) {
            t->peak = t->total;
            t->peak_depth = t->depth;
            for (int d = 0; d < t->depth && d < kDepth; ++d) {
                t->peak_sizes[d] = t->sizes[d];
                t->peak_callers[d] = t->callers[d];
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return pointer;
}

void swift_task_dealloc(void *pointer) {
    void *task = current_task ? current_task() : NULL;
    if (task != NULL) {
        pthread_mutex_lock(&lock);
        Task *t = entry(task, 0);
        if (t != NULL && t->depth > 0) {
            t->depth -= 1;
            if (t->depth < kDepth) t->total -= footprint(t->sizes[t->depth]);
        }
        pthread_mutex_unlock(&lock);
    }
    real_dealloc(pointer);
}

static void write_stack(FILE *out, int depth, const size_t *sizes, void *const *callers) {
    for (int d = 0; d < depth && d < kDepth; ++d) {
        Dl_info info = {0};
        dladdr(callers[d], &info);
        fprintf(out, "  %6zu %s+0x%lx\n", sizes[d], info.dli_fname ? info.dli_fname : "?",
                (unsigned long)((char *)callers[d] - (char *)info.dli_fbase));
    }
}

// Live tasks grouped by their bytes now (peak = 0) or at their deepest (peak = 1).
static void write_groups(FILE *out, int peak) {
    static int counts[kBuckets];
    static Task *examples[kBuckets];
    for (int k = 0; k < kBuckets; ++k) counts[k] = 0, examples[k] = NULL;
    for (size_t i = 0; i < kTasks; ++i) {
        Task *t = &tasks[i];
        if (t->task == NULL || t->depth <= 0) continue;
        size_t bucket = (peak ? t->peak : t->total) / 16;
        if (bucket >= kBuckets) bucket = kBuckets - 1;
        counts[bucket] += 1;
        if (examples[bucket] == NULL) examples[bucket] = t;
    }
    for (int k = 0; k < kBuckets; ++k) {
        if (counts[k] < 5) continue;
        Task *t = examples[k];
        fprintf(out, "== %d tasks with %d bytes %s (with headers)\n", counts[k], k * 16, peak ? "at their deepest" : "now");
        if (peak) write_stack(out, t->peak_depth, t->peak_sizes, t->peak_callers);
        else write_stack(out, t->depth, t->sizes, t->callers);
    }
}

static void *watch(void *unused) {
    (void)unused;
    for (;;) {
        usleep(200000);
        if (unlink("/tmp/task-stack-probe-dump") != 0) continue;
        pthread_mutex_lock(&lock);
        FILE *out = fopen("/tmp/task-stack-probe.txt", "w");
        if (out != NULL) {
            write_groups(out, 0);
            write_groups(out, 1);
            fclose(out);
        }
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    tasks = calloc(kTasks, sizeof *tasks);
    real_alloc = dlsym(RTLD_NEXT, "swift_task_alloc");
    real_dealloc = dlsym(RTLD_NEXT, "swift_task_dealloc");
    current_task = dlsym(RTLD_DEFAULT, "swift_task_getCurrent");
    if (tasks == NULL || real_alloc == NULL) return;  // not a Swift program: nothing to probe
    pthread_t thread;
    pthread_create(&thread, NULL, watch, NULL);
}
