import Jansson
@testable import JSONRPC
import XCTest

/// `"params": null` is no params (Emacs's jsonrpc.el sends `shutdown` and
/// `exit` that way); params of any other scalar type stay invalid.
final class ParamsNullTests: XCTestCase {
    private func parse(_ text: String) -> IncomingMessage { IncomingMessage.parse(Array(text.utf8)) }

    func testNullParamsAreAbsent() {
        guard case .single(.request(let request)) = parse(#"{"jsonrpc":"2.0","id":1,"method":"shutdown","params":null}"#) else {
            return XCTFail("a request")
        }
        XCTAssertNil(request.params)
        guard case .single(.request(let exit)) = parse(#"{"jsonrpc":"2.0","method":"exit","params":null}"#) else {
            return XCTFail("a notification")
        }
        XCTAssertTrue(exit.isNotification)
        XCTAssertNil(exit.params)
    }

    func testOtherScalarParamsAreInvalid() {
        for params in ["1", "\"x\"", "true"] {
            guard case .single(.invalid(let reason, let id)) = parse(#"{"jsonrpc":"2.0","id":1,"method":"m","params":\#(params)}"#) else {
                return XCTFail("params \(params) are invalid")
            }
            XCTAssertEqual(reason, "\"params\" must be an object or an array")
            XCTAssertEqual(id, RequestID(raw: .integer(1)))
        }
    }

    func testMCPsCancellationIsKnownToTheConnection() {
        XCTAssertEqual(Connection.cancelNotifications["notifications/cancelled"]?.member, "requestId")
        XCTAssertEqual(Connection.cancelNotifications["notifications/cancelled"]?.silently, true)
        XCTAssertEqual(Connection.cancelNotifications["$/cancelRequest"]?.member, "id")
        XCTAssertEqual(Connection.cancelNotifications["$/cancelRequest"]?.silently, false)
    }
}
