import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct APNSCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apnsctl",
        abstract: "Send Apple push notifications and Live Activity updates from a shell.",
        discussion: """
            Credentials come from flags or the environment (APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID, \
            APNS_TOPIC, APNS_ENVIRONMENT). Every command takes --color auto|always|never: auto colours a \
            terminal unless NO_COLOR is set.

            Examples:
              export APNS_KEY_FILE=AuthKey_ABC123DEFG.p8 APNS_KEY_ID=ABC123DEFG \\
                     APNS_TEAM_ID=DEF123GHIJ APNS_TOPIC=com.example.app
              apnsctl doctor --environment sandbox
              apnsctl send --environment sandbox --token 7c1d… --title Hi --body Hello
              apnsctl send --tokens-file tokens.txt --payload alert.json > verdicts.ndjson
              apnsctl serve --port 0 --ui-port 0 --write-ca ca.pem
              apnsctl send --url https://localhost:PORT --ca-file ca.pem --token 7c1d… \\
                  --title Hi

            Exit codes: 0 all accepted; 1 one or more rejected; 64 usage; 65 bad data (token, payload, key, ids); \
            66 input file missing; 69 endpoint unreachable or TLS failure; 70 internal error; 73 an output file \
            or port cannot be created; 74 a journal write failed; 75 the journal is in use by another process; \
            130 stopped by Ctrl-C.
            """,
        version: APNSCtlVersion.description,
        subcommands: [Send.self, Lint.self, Campaign.self, Activity.self, Activities.self, Channels.self, Doctor.self, JWT.self, Serve.self, Demo.self]
    )

    /// ArgumentParser's `main()`, with two differences. Rules between flags (each command's
    /// `check()`) run after parsing, so an unknown flag is reported as one ("unknown option
    /// '--tokn'"), not as the required flag it was meant to be; ArgumentParser runs `validate()`
    /// before it looks for unknown options. And every error starts with `error:`, as apnsctl's own do.
    static func main() async {
        let arguments = Self.takeColorChoice(Array(CommandLine.arguments.dropFirst()))
        // `apnsctl sned --token …` would be reported as an unknown option of the root command.
        if let word = arguments.first, !word.hasPrefix("-") {
            let names = Self.configuration.subcommands.map { $0._commandName } + ["help"]
            if !names.contains(word) {
                let hint = DidYouMean.suggestion(for: word, among: names).map { "; did you mean '\($0)'?" } ?? ""
                Output.diagnostic("error: unknown command '\(word)'\(hint)\nUsage: \(Self.usageString())\n  See 'apnsctl --help' for the commands.")
                Glibc.exit(ExitCode.validationFailure.rawValue)
            }
        }
        let command: any ParsableCommand
        do {
            command = try Self.parseAsRoot(arguments)
        } catch {
            Self.exitReporting(error, usage: nil)
        }
        do {
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                var synchronous = command
                try synchronous.run()
            }
        } catch let error as ValidationError {
            Self.exitReporting(error, usage: type(of: command))
        } catch {
            Self.exit(withError: error)
        }
    }

    /// `--color auto|always|never` (or `--color=…`), a flag of every command, taken out before the
    /// arguments are parsed and applied to ``Output``: `auto` (the default) colours a terminal
    /// unless `NO_COLOR` is set. An unknown value is a usage error (64).
    private static func takeColorChoice(_ arguments: [String]) -> [String] {
        var rest: [String] = []
        var choice = Output.ColorChoice.auto
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                rest += arguments[index...]
                break
            }
            var value: String?
            if argument == "--color" {
                value = index + 1 < arguments.count ? arguments[index + 1] : ""
                index += 2
            } else if argument.hasPrefix("--color=") {
                value = String(argument.dropFirst("--color=".count))
                index += 1
            } else {
                rest.append(argument)
                index += 1
                continue
            }
            guard let text = value, let parsed = Output.ColorChoice(rawValue: text) else {
                Output.diagnostic("error: --color must be auto, always or never (got '\(value ?? "")')")
                Glibc.exit(ExitCode.validationFailure.rawValue)
            }
            choice = parsed
        }
        Output.useColor(choice, environment: ProcessInfo.processInfo.environment)
        return rest
    }

    /// Exits with ArgumentParser's message for `error`, `error:` first, and for a rule broken between
    /// flags the usage of the command that broke it.
    private static func exitReporting(_ error: any Error, usage command: (any ParsableCommand.Type)?) -> Never {
        guard Self.exitCode(for: error) != .success else { Self.exit(withError: error) }
        var text = Self.fullMessage(for: error)
        if let command, let validation = error as? ValidationError {
            let name = Self.usageString(for: command).split(separator: " ").prefix(while: { !$0.hasPrefix("<") && !$0.hasPrefix("[") })
            text = "\(validation.message)\nUsage: \(Self.usageString(for: command))\n  See '\(name.joined(separator: " ")) --help' for more information."
        }
        if text.hasPrefix("Error: ") { text = "error: " + text.dropFirst("Error: ".count) } else if !text.hasPrefix("error:") { text = "error: " + text }
        Output.diagnostic(text)
        Glibc.exit(Self.exitCode(for: error).rawValue)
    }
}
