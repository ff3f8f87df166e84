/// Connection-level HTTP/2 settings a side announces.
package struct HTTP2Settings: Hashable, Sendable {
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`; `nil` announces none (unlimited).
    package var maxConcurrentStreams: UInt32?
    /// `SETTINGS_INITIAL_WINDOW_SIZE`.
    package var initialWindowSize: UInt32
    /// `SETTINGS_MAX_FRAME_SIZE`.
    package var maxFrameSize: UInt32
    /// `SETTINGS_HEADER_TABLE_SIZE`.
    package var headerTableSize: UInt32
    /// `SETTINGS_MAX_HEADER_LIST_SIZE`; `nil` announces none.
    package var maxHeaderListSize: UInt32?

    /// HTTP/2's defaults, with no stream limit announced.
    package init(
        maxConcurrentStreams: UInt32? = nil,
        initialWindowSize: UInt32 = 65_535,
        maxFrameSize: UInt32 = 16_384,
        headerTableSize: UInt32 = 4_096,
        maxHeaderListSize: UInt32? = nil
    ) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialWindowSize = initialWindowSize
        self.maxFrameSize = maxFrameSize
        self.headerTableSize = headerTableSize
        self.maxHeaderListSize = maxHeaderListSize
    }
}
