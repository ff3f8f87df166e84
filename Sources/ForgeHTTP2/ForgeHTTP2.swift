// ForgeHTTP2: the HTTP/2 client and server over nghttp2 and OpenSSL.
//
// Filled by the transport issue. This file only gives the target a source so that the layer is
// visible in Package.swift; it declares nothing.
