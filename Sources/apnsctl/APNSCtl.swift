import ArgumentParser

@main
struct APNSCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apnsctl",
        abstract: "Send Apple push notifications and Live Activity updates from a shell."
    )
}
