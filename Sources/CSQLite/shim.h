#ifndef PITLANE_CSQLITE_SHIM_H
#define PITLANE_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
