#!/usr/bin/env bash
# Regenerates the key fixtures of ForgeCryptoTests with the openssl tool. Public test keys only:
# Apple has never seen any of them. Each file exercises one way a .p8 can be wrong.
set -euo pipefail
cd "$(dirname "$0")"

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out good-p256.p8            # PKCS#8, like Apple's
openssl pkey -in good-p256.p8 -pubout -out good-p256.pub.pem
openssl ec -in good-p256.p8 -out good-p256-sec1.pem 2>/dev/null                             # BEGIN EC PRIVATE KEY
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out other-p256.p8           # a second, unrelated key
openssl pkey -in other-p256.p8 -pubout -out other-p256.pub.pem
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out p384.p8
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:secp256k1 -out secp256k1.p8
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rsa2048.p8
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -traditional -out rsa-traditional.pem 2>/dev/null \
    || openssl rsa -in rsa2048.p8 -traditional -out rsa-traditional.pem
openssl genpkey -algorithm ED25519 -out ed25519.p8
openssl pkcs8 -topk8 -in good-p256.p8 -out encrypted-p256.p8 -passout pass:secret -v2 aes-256-cbc
head -c 120 good-p256.p8 > truncated-p256.p8                                                # PEM cut in the middle
sed '2s/./!/5' good-p256.p8 > damaged-p256.p8                                               # a non-base64 byte
sed '2s/^\(....\)..../\1AAAA/' good-p256.p8 > corrupt-der-p256.p8                           # valid base64, broken DER
openssl pkey -in good-p256.p8 -outform DER -out not-pem.p8                                  # DER, not PEM
# Apple's downloads keep the curve in the inner ECPrivateKey too (base64 starts MIGTAgEA, OpenSSL's
# own PKCS#8 output starts MIGHAgEA): re-wrap the SEC1 key by hand, as Apple's files are laid out.
sec1=$(openssl ec -in good-p256.p8 -outform DER 2>/dev/null | od -An -v -tx1 | tr -d ' \n')
inner_length=$(printf '%02x' $(( ${#sec1} / 2 )))
body="020100301306072a8648ce3d020106082a8648ce3d03010704${inner_length}${sec1}"
der="3081$(printf '%02x' $(( ${#body} / 2 )))${body}"
{ echo "-----BEGIN PRIVATE KEY-----"; echo "$der" | xxd -r -p | base64 -w 64; echo "-----END PRIVATE KEY-----"; } > apple-layout-p256.p8
openssl pkey -in apple-layout-p256.p8 -noout
: > empty.p8
openssl req -x509 -new -key good-p256.p8 -subj /CN=forgepush-test -days 3650 -out certificate.pem
echo "ForgeCryptoTests fixtures regenerated"
