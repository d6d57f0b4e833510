#ifndef PITLANE_CLIBPQ_SHIM_H
#define PITLANE_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
