// `import ForgeAPNs` is all a server that sends needs: the model (identifiers such as `DeviceToken`
// and `APNSBundleID`, notifications, payloads, environments, responses and validation errors) from
// ForgeAPNsCore, and the provider-token keys (`APNSSigningKey`, `APNSKeyID`, `APNSTeamID`) from
// ForgeCrypto. Both are separate targets for the layering (see Package.swift), not for users.
@_exported public import ForgeAPNsCore
@_exported public import ForgeCrypto
