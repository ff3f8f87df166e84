import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Measurement helpers shared by the benchmark cases.
enum Bench {
    /// Warns on stderr when the benchmark was built without optimisation.
    static func warnIfDebug() {
        #if DEBUG
        Self.printError("warning: apns-bench was built in debug mode; run `swift run -c release apns-bench …` for real figures")
        #endif
    }

    /// Writes a line to standard error.
    static func printError(_ line: String) {
        let text = line + "\n"
        _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }

    /// Process CPU time (user + system) in microseconds.
    static func cpuMicroseconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let user = Double(usage.ru_utime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec)
        let system = Double(usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_stime.tv_usec)
        return user + system
    }

    /// CPU time (user + system) of another process, in microseconds, from `/proc/PID/stat` (clock
    /// ticks, 10 ms apart): for a server child whose CPU a client run makes it spend.
    static func cpuMicroseconds(ofProcess pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")")
        else { return 0 }
        // After "pid (name) ": state is field 3, utime 14 and stime 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) * 1e6 / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU time every process on the machine spent (user, nice, system, interrupts, steal), in
    /// microseconds, from the first line of `/proc/stat` (clock ticks, 10 ms apart): for a phase
    /// whose work is shared with other processes (a server child, a database server).
    static func machineCPUMicroseconds() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return 0 }
        // cpu user nice system idle iowait irq softirq steal …
        let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard ticks.count >= 8 else { return 0 }
        let busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
        return busy * 1e6 / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Peak resident set size in MiB.
    static func peakRSSMiB() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_maxrss) / 1024  // ru_maxrss is in KiB on Linux
    }

    /// The resident set size now, in MiB (`/proc/self/statm`).
    static func currentRSSMiB() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = text.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return 0 }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }

    /// The result of one named case.
    struct Result {
        var name: String
        var operations: Int
        var seconds: Double
        var cpuMicroseconds: Double

        var operationsPerSecond: Double { Double(self.operations) / self.seconds }
        var nanosecondsPerOperation: Double { self.seconds * 1e9 / Double(self.operations) }
        var cpuNanosecondsPerOperation: Double { self.cpuMicroseconds * 1e3 / Double(self.operations) }
    }

    /// Runs `body(count)` once as a warm-up with a tenth of the count, then measures it.
    static func measure(_ name: String, operations: Int, _ body: (Int) throws -> Int) rethrows -> Result {
        var sink = try body(max(1, operations / 10))
        let clock = ContinuousClock()
        let cpuStart = Self.cpuMicroseconds()
        let start = clock.now
        sink &+= try body(operations)
        let elapsed = start.duration(to: clock.now)
        let cpu = Self.cpuMicroseconds() - cpuStart
        if sink == 42 { Self.printError("") }  // keeps the work observable to the optimiser
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Result(name: name, operations: operations, seconds: seconds, cpuMicroseconds: cpu)
    }
}

extension Bench {
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func milliseconds(_ duration: Duration) -> Double { Self.seconds(duration) * 1000 }

    static func microseconds(_ usage: rusage) -> Double {
        Double(usage.ru_utime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec) + Double(usage.ru_stime.tv_sec) * 1e6
            + Double(usage.ru_stime.tv_usec)
    }

    /// The `fraction` percentile of sorted values.
    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction + 0.5))]
    }

    /// The median: the middle value, or the mean of the two middle ones for an even count.
    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func format(_ value: Double, digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }
}
