import XCTest
@testable import JSONRPC

/// `Condition`'s deadlines: on the monotonic clock, and any number of
/// seconds (a `--drain-timeout inf` or a `replay --timeout 1e300`) is one.
final class ConditionTests: XCTestCase {
    func testDeadlinesPassAndAnyNumberOfSecondsIsOne() {
        XCTAssertTrue(Condition.isPast(Condition.deadline(after: 0)))
        XCTAssertTrue(Condition.isPast(Condition.deadline(after: -5)))
        XCTAssertTrue(Condition.isPast(Condition.deadline(after: .nan)))
        XCTAssertFalse(Condition.isPast(Condition.deadline(after: 60)))
        for seconds in [Double.infinity, 1e300, 9.3e15] {
            XCTAssertFalse(Condition.isPast(Condition.deadline(after: seconds)), "\(seconds)")
        }
        let deadline = Condition.deadline(after: 0.9999999999)
        XCTAssertLessThan(deadline.tv_nsec, 1_000_000_000)
    }
}
