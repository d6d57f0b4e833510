#ifndef PITLANE_CZLIB_SHIM_H
#define PITLANE_CZLIB_SHIM_H
#include <zlib.h>
#endif
