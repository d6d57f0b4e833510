#ifndef PITLANE_CHTTPPARSER_SHIM_H
#define PITLANE_CHTTPPARSER_SHIM_H
#include <http_parser.h>
#endif
