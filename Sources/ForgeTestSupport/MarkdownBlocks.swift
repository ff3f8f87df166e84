import Foundation

/// The fenced code blocks of a Markdown text, for the tests that run the README as written.
public enum MarkdownBlocks {
    /// The bodies of the ```` ```language ```` blocks of `markdown`, in order, each line as written
    /// (the fences themselves left out, no newline after the last line).
    public static func fenced(_ markdown: Substring, language: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            let fence = line.trimmingCharacters(in: .whitespaces)
            if current == nil, fence == "```" + language {
                current = []
            } else if current != nil, fence == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }
}
