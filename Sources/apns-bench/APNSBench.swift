import ArgumentParser

@main
struct APNSBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-bench",
        abstract: "Measure ForgePush's speed and memory. Run it in release: swift run -c release apns-bench …",
        subcommands: [Encode.self, Transport.self, Server.self, Client.self, Bulk.self, CLI.self, Reconnect.self, TransportServer.self, APNSServer.self, Activities.self, Gateway.self]
    )
}
