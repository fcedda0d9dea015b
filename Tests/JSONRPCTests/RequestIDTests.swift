import Jansson
import XCTest
@testable import JSONRPC

/// Replies echo a request's id with its type; a number with a fraction or
/// an exponent comes back in the shortest form that reads as the same double.
final class RequestIDTests: XCTestCase {
    private func echoed(_ id: String) throws -> String? {
        let message = IncomingMessage.parse(Array(#"{"jsonrpc":"2.0","method":"status","id":\#(id)}"#.utf8))
        guard case .single(.request(let request)) = message else {
            XCTFail("not a request: \(id)")
            return nil
        }
        return request.id?.description
    }

    func testStringsIntegersAndNullAreEchoedAsTheyArrived() throws {
        for id in [#""1""#, #""a b\"c""#, "0", "-7", "9007199254740993", "9223372036854775807", "null"] {
            XCTAssertEqual(try echoed(id), id)
        }
    }

    func testFractionsAndExponentsAreEchoedShortest() throws {
        let cases = [("0.1", "0.1"), ("1.5", "1.5"), ("2.5e-3", "0.0025"), ("1e3", "1000.0"), ("-0.0", "-0.0"), ("1e22", "1e+22")]
        for (id, expected) in cases {
            let text = try XCTUnwrap(try echoed(id))
            XCTAssertEqual(text, expected, id)
            // What is echoed reads back as the same number.
            XCTAssertEqual(try JSON.parse(text).number, try JSON.parse(id).number, id)
        }
    }
}
