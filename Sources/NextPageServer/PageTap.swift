import NextPage
import NIOConcurrencyHelpers

/// Where the shell commands take the pages a `loadAll` delivers, as they
/// landed, instead of as `page` notifications that they would have to read
/// back to print the items: `nextpage all` writes each page's item array
/// out with its separators turned into line ends.
public final class PageTap: Sendable {
    private let handler = NIOLockedValueBox<(@Sendable (_ collection: String, _ page: PageResult) -> Void)?>(nil)

    public init() {}

    /// Takes every page from now on (`nil`: none, they go out as notifications again).
    public func take(_ handler: (@Sendable (_ collection: String, _ page: PageResult) -> Void)?) {
        self.handler.withLockedValue { $0 = handler }
    }

    /// Hands a page to the handler; false when there is none.
    func deliver(_ collection: String, _ page: PageResult) -> Bool {
        guard let handler = handler.withLockedValue({ $0 }) else { return false }
        handler(collection, page)
        return true
    }
}
