import ForgeAPNsCore
import ForgeFuzzSupport

/// A `.apns` file (`apnsctl send --apns-file`, the simulated device's drag and drop).
enum SimulatorFileFuzz {
    static func test(_ bytes: [UInt8]) {
        guard let file = try? APNSSimulatorFile(contents: bytes) else { return }
        // What `render` writes for a file's payload and bundle reads back as the same bundle.
        guard let bundle = file.targetBundle, let rendered = APNSSimulatorFile.render(payload: file.payload, bundleID: bundle),
            rendered.count <= APNSSimulatorFile.maximumSize
        else { return }
        do {
            let again = try APNSSimulatorFile(contents: rendered)
            guard again.targetBundle == bundle else { fatalError("render then read changed the bundle") }
        } catch {
            fatalError("a rendered .apns file does not read back: \(error)")
        }
    }
}

@main
enum FuzzSimulatorFile {
    static func main() { FuzzDriver.main(SimulatorFileFuzz.test) }
}
