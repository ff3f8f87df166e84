// ForgeCrypto: ES256 provider tokens over OpenSSL.
