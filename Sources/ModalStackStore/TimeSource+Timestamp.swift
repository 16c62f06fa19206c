import ModalStackCore
import Timekeeping

extension TimeSource {
    /// The wall clock, in the core's terms.
    public func now() -> Timestamp {
        Timestamp(millisecondsSinceEpoch: wallMilliseconds())
    }
}
