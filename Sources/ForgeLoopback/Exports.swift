// `import ForgeLoopback` is all a loopback test needs: the client (ForgeAPNs, which brings the model
// and the keys), the simulated device and the app-side types its apps are made of (routers, the
// service extension, delivered notifications). They are separate targets for the layering (see
// Package.swift), not for users. The HTTP/2 transport is not among them: the local server takes its
// own configuration (LocalAPNSServer.Listener, LocalAPNSServer.TLS).
@_exported public import ForgeAPNs
@_exported public import ForgeNotificationService
@_exported public import ForgeNotificationTypes
@_exported public import ForgeSilentPush
@_exported public import ForgeSimulatedDevice
@_exported public import ForgeVisiblePush
