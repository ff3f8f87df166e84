import ArgumentParser

@main
struct APNSCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apnsctl",
        abstract: "Send Apple push notifications and Live Activity updates from a shell.",
        discussion: """
            Credentials come from flags or the environment (APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID, \
            APNS_TOPIC, APNS_ENVIRONMENT).

            Examples:
              apnsctl jwt --key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ
              apnsctl send --dry-run --token 7c1d… --topic com.example.app --push-type alert --payload alert.json

            Exit codes: 0 all accepted; 1 one or more rejected; 64 usage; 65 bad data (token, payload, key, ids); \
            66 input file missing; 69 endpoint unreachable or TLS failure; 70 internal error.
            """,
        version: "0.1.0",
        subcommands: [Send.self, Activity.self, Channels.self, Doctor.self, JWT.self, Serve.self, Demo.self]
    )
}
