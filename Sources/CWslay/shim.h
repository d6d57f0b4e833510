#ifndef PITLANE_CWSLAY_SHIM_H
#define PITLANE_CWSLAY_SHIM_H
#include <wslay/wslay.h>
#endif
