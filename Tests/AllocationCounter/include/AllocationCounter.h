#ifndef PITLANE_ALLOCATION_COUNTER_H
#define PITLANE_ALLOCATION_COUNTER_H

/// Starts counting heap allocations (malloc, calloc, realloc and the aligned forms) made by
/// any thread of this process, from zero.
void pitlane_allocations_start(void);

/// Stops counting and returns how many allocations were made since the start.
unsigned long pitlane_allocations_stop(void);

#endif
