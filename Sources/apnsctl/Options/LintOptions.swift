import ArgumentParser
import ForgeAPNsCore

/// `--no-lint ID`: lints (docs/lints.md) a sender has decided to live with, silenced by id.
struct LintOptions: ParsableArguments {
    @Option(
        name: .customLong("no-lint"),
        help: ArgumentHelp("Do not warn about this lint (an id such as LA006; docs/lints.md). Repeatable.", valueName: "id")
    )
    var silenced: [String] = []

    /// Every id must be a known lint's (64 otherwise, listing the known ones).
    func check() throws {
        let known = APNSLint.catalog.map(\.id)
        for id in self.silenced where !known.contains(id.uppercased()) {
            let hint = DidYouMean.suggestion(for: id.uppercased(), among: known).map { " (did you mean \($0)?)" } ?? ""
            throw ValidationError("--no-lint \(id): no such lint\(hint); known: \(known.joined(separator: ", ")).")
        }
    }

    /// Whether `id` is silenced.
    func isSilenced(_ id: String) -> Bool { self.silenced.contains { $0.uppercased() == id } }

    /// `lints` without the silenced ones.
    func kept(_ lints: [APNSLint]) -> [APNSLint] {
        guard !self.silenced.isEmpty else { return lints }
        let silenced = Set(self.silenced.map { $0.uppercased() })
        return lints.filter { !silenced.contains($0.id) }
    }

    /// Prints the lints that are not silenced as warnings on stderr (`warning: LA001: …`) and
    /// returns them, for the result lines' `lints` field.
    @discardableResult
    func warn(_ lints: [APNSLint]) -> [APNSLint] {
        let kept = self.kept(lints)
        for lint in kept { Output.diagnostic("warning: \(lint)") }
        return kept
    }
}
