#ifndef C_FORGE_OPENSSL_H
#define C_FORGE_OPENSSL_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <openssl/pkcs12.h>
#include <openssl/core_names.h>

// Function-like macros of OpenSSL 3.0 that Swift cannot call. Each wrapper is named with the module
// prefix so that it never clashes with another package's shim.

/// Initializes OpenSSL without its exit-time cleanup. OpenSSL 3 frees its global state from an
/// `atexit` handler, and a thread still inside OpenSSL at that moment (a connection's I/O thread
/// ending its TLS session as the process exits) crashes: a C program whose threads create and free
/// `SSL_CTX`s while `main` calls `exit` crashed in 176 of 200 runs, and in none with this option.
/// The first initialization decides, so each module calls it before its first OpenSSL call; the
/// memory is the operating system's to free at exit.
static inline void CForgeOpenSSL_initWithoutExitCleanup(void) { OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL); }

/// `OPENSSL_free` is a macro over `CRYPTO_free`; needed to free the output of `i2d_*`.
static inline void CForgeOpenSSL_free(void *pointer) { OPENSSL_free(pointer); }

/// `BIO_get_mem_data` is a macro over `BIO_ctrl`.
static inline long CForgeOpenSSL_BIO_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

/// `BIO_reset` is a macro over `BIO_ctrl`; on a memory BIO it discards the data read so far.
static inline int CForgeOpenSSL_BIO_reset(BIO *bio) { return (int)BIO_reset(bio); }

/// `SSL_CTX_set_min_proto_version` is a macro over `SSL_CTX_ctrl`.
static inline int CForgeOpenSSL_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

/// `SSL_set_tlsext_host_name` is a macro over `SSL_ctrl`.
static inline int CForgeOpenSSL_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/// `SSL_CTX_set_mode` is a macro over `SSL_CTX_ctrl`.
static inline long CForgeOpenSSL_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }

/// `MBSTRING_ASC` is `(MBSTRING_FLAG|1)`, which does not import.
static const int CForgeOpenSSL_MBSTRING_ASC = MBSTRING_ASC;

/// `SSL_OP_*` are `SSL_OP_BIT(n)` expressions, which do not import.
static const uint64_t CForgeOpenSSL_SSL_OP_NO_COMPRESSION = SSL_OP_NO_COMPRESSION;
static const uint64_t CForgeOpenSSL_SSL_OP_NO_RENEGOTIATION = SSL_OP_NO_RENEGOTIATION;

#endif
