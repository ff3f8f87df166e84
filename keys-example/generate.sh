#!/usr/bin/env bash
# Regenerates every key, certificate and check in keys-example/ with the openssl command-line tool.
#
# THESE ARE PUBLIC TEST KEYS. Apple has never seen them; they sign nothing real. Never use them, or
# anything signed by this CA, outside ForgePush's tests and demo.
set -euo pipefail
cd "$(dirname "$0")"

days_ca=7300     # 20 years
days_leaf=3650   # 10 years

# 1. Provider-token keys: EC P-256 in PKCS#8 PEM, exactly the format of Apple's AuthKey_<KEYID>.p8.
#    FORGEKEY01 belongs to team FORGETEAM1; FORGEKEY02 to FORGETEAM2 (for auth-mismatch tests).
for kid in FORGEKEY01 FORGEKEY02; do
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "AuthKey_${kid}.p8"
    openssl pkey -in "AuthKey_${kid}.p8" -pubout -out "AuthKey_${kid}.pub.pem"
done

# 2. A test CA that nothing trusts but ForgePush's tests.
openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 -days "$days_ca" \
    -keyout ca.key -out ca.pem -subj "/O=ForgePush Test/CN=ForgePush Test CA (not trusted anywhere)" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"

# 3. The local APNs server's certificate: localhost, 127.0.0.1 and ::1.
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr \
    -subj "/O=ForgePush Test/CN=localhost"
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days "$days_leaf" -out server.pem \
    -extfile <(printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=serverAuth" "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1")

# 4. A client certificate shaped like Apple's push certificates (UID = bundle id), for certificate
#    authentication against the local server; also as PKCS#12 with the password forgepush-test.
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout client.key -out client.csr \
    -subj "/UID=com.example.forgepush/CN=Apple Push Services: com.example.forgepush/O=ForgePush Test"
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days "$days_leaf" -out client.pem \
    -extfile <(printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=clientAuth")
openssl pkcs12 -export -in client.pem -inkey client.key -certfile ca.pem -out client.p12 \
    -passout pass:forgepush-test -name "ForgePush Test Push Certificate"
rm -f server.csr client.csr ca.srl

# 5. Checks.
openssl verify -CAfile ca.pem server.pem client.pem
openssl x509 -in server.pem -noout -ext subjectAltName
openssl pkcs12 -in client.p12 -passin pass:forgepush-test -noout
for kid in FORGEKEY01 FORGEKEY02; do
    openssl pkey -in "AuthKey_${kid}.p8" -noout -text | grep -q 'NIST CURVE: P-256'
done
for file in payloads/*.json; do python3 -m json.tool "$file" >/dev/null; done
echo "keys-example: regenerated and checked"
