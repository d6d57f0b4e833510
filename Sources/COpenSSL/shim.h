#ifndef PITLANE_COPENSSL_SHIM_H
#define PITLANE_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#endif
