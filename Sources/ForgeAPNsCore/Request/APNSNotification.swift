/// A notification that can be validated and encoded into a request for a device token.
///
/// Every push type has a type conforming to this protocol; the client sends any of them.
public protocol APNSNotification: Sendable {
    /// The `apns-push-type`.
    var pushType: APNSPushType { get }

    /// Validates every field and encodes the payload once.
    /// - Throws: ``APNSValidationError`` naming the field and the rule; nothing is sent.
    func prepared() throws(APNSValidationError) -> APNSPreparedNotification
}
