import ArgumentParser

@main
struct APNSBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-bench",
        abstract: "Measure ForgePush's speed and memory in release builds."
    )
}
