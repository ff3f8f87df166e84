// `import ForgeLoopback` is all a loopback test needs: the client (ForgeAPNs, which brings the model
// and the keys), the simulated device and the app-side types its apps are made of (routers, the
// service extension, delivered notifications), and the HTTP/2 server settings the local server
// takes. They are separate targets for the layering (see Package.swift), not for users.
@_exported public import ForgeAPNs
@_exported public import ForgeHTTP2
@_exported public import ForgeNotificationService
@_exported public import ForgeNotificationTypes
@_exported public import ForgeSilentPush
@_exported public import ForgeSimulatedDevice
@_exported public import ForgeVisiblePush
