// `import ForgeLiveActivities` is all a backend that manages Live Activities needs: the client, the
// notifications and identifiers (ForgeAPNs, which brings the model and the keys) come with it.
@_exported public import ForgeAPNs
