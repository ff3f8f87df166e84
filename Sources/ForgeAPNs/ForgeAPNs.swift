// ForgeAPNs: the pooled, retrying APNs client built on ForgeAPNsCore, ForgeCrypto and ForgeHTTP2.
//
// Filled by the client issue. This file only gives the target a source so that the layer is
// visible in Package.swift; it declares nothing.
