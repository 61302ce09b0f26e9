//! The append stream on both sides, over in-memory streams.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::*;

/// A follower that upper-cases each request, after 200 ms for "slow", and
/// refuses "bad".
async fn follower(data: Vec<u8>) -> Result<Vec<u8>, Status> {
    if data == b"slow" {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if data == b"bad" {
        return Err(Status::invalid_argument("bad request"));
    }
    Ok(data.to_ascii_uppercase())
}

/// Opens a stream to [`follower`], counting the opens.
fn opener(
    opens: &Arc<AtomicUsize>,
) -> impl FnOnce(ReceiverStream<Sequenced>) -> std::future::Ready<Result<Replies, Status>> {
    let opens = opens.clone();
    move |requests| {
        opens.fetch_add(1, Ordering::SeqCst);
        let replies: Replies = Box::pin(serve(requests.map(Ok), std::future::pending(), follower));
        std::future::ready(Ok(replies))
    }
}

const LONG: Duration = Duration::from_secs(5);

#[tokio::test(start_paused = true)]
async fn requests_share_one_stream_and_get_their_own_replies() {
    let opens = Arc::new(AtomicUsize::new(0));
    let mut stream = AppendStream::default();
    for word in ["one", "two", "three"] {
        let reply = stream.exchange(word.into(), LONG, opener(&opens)).await;
        assert_eq!(reply.map_err(|s| s.to_string()), Ok(word.to_uppercase().into_bytes()));
    }
    assert_eq!(opens.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_request_given_up_on_leaves_its_stream_behind() {
    let opens = Arc::new(AtomicUsize::new(0));
    let mut stream = AppendStream::default();
    // openraft drops a call at its time-to-live: the next call does not
    // queue behind the request it gave up on, on a new stream.
    let abandoned =
        tokio::time::timeout(Duration::from_millis(50), stream.exchange(b"slow".to_vec(), LONG, opener(&opens))).await;
    assert!(abandoned.is_err());
    let started = tokio::time::Instant::now();
    let reply = stream.exchange(b"next".to_vec(), LONG, opener(&opens)).await;
    assert_eq!(reply.map_err(|s| s.to_string()), Ok(b"NEXT".to_vec()));
    assert!(started.elapsed() < Duration::from_millis(100), "answered without waiting for the slow request");
    assert_eq!(opens.load(Ordering::SeqCst), 2);
    let reply = stream.exchange(b"then".to_vec(), LONG, opener(&opens)).await;
    assert_eq!(reply.map_err(|s| s.to_string()), Ok(b"THEN".to_vec()));
    assert_eq!(opens.load(Ordering::SeqCst), 2, "an answered call keeps its stream");
}

#[tokio::test(start_paused = true)]
async fn a_failure_or_a_late_reply_closes_the_stream_and_the_next_request_opens_another() {
    let opens = Arc::new(AtomicUsize::new(0));
    let mut stream = AppendStream::default();
    let refused = stream.exchange(b"bad".to_vec(), LONG, opener(&opens)).await;
    assert_eq!(refused.map_err(|s| s.code()), Err(tonic::Code::InvalidArgument));
    let late = stream.exchange(b"slow".to_vec(), Duration::from_millis(50), opener(&opens)).await;
    assert_eq!(late.map_err(|s| s.code()), Err(tonic::Code::Cancelled));
    let reply = stream.exchange(b"ok".to_vec(), LONG, opener(&opens)).await;
    assert_eq!(reply.map_err(|s| s.to_string()), Ok(b"OK".to_vec()));
    assert_eq!(opens.load(Ordering::SeqCst), 3);
    assert!(stream.usable(Instant::now()));
}

#[tokio::test(start_paused = true)]
async fn a_follower_without_the_stream_is_left_alone_for_a_while() {
    let mut stream = AppendStream::default();
    let unknown = |_| std::future::ready(Err::<Replies, _>(Status::unimplemented("unknown method AppendStream")));
    let answer = stream.exchange(b"x".to_vec(), LONG, unknown).await;
    assert_eq!(answer.map_err(|s| s.code()), Err(tonic::Code::Unimplemented));
    let now = Instant::now();
    assert!(!stream.usable(now));
    assert!(!stream.usable(now + RETRY_UNSUPPORTED - Duration::from_millis(1)));
    assert!(stream.usable(now + RETRY_UNSUPPORTED));
}

#[tokio::test(start_paused = true)]
async fn a_stopping_follower_finishes_the_request_in_hand_then_ends_the_stream() {
    let (requests, inbound) = mpsc::channel(STREAM_DEPTH);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let stop = async move {
        let _ = stop_rx.await;
    };
    let mut replies = serve(ReceiverStream::new(inbound).map(Ok), stop, follower);
    requests.send(Sequenced { seq: 7, data: b"slow".to_vec() }).await.expect("stream open");
    tokio::time::sleep(Duration::from_millis(10)).await;
    stop_tx.send(()).expect("server waiting");
    let first = replies.next().await.map(|r| r.map_err(|s| s.code()));
    assert_eq!(first, Some(Ok(Sequenced { seq: 7, data: b"SLOW".to_vec() })));
    let second = replies.next().await.map(|r| r.map_err(|s| s.code()));
    assert_eq!(second, Some(Err(tonic::Code::Unavailable)));
    assert!(replies.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_refused_request_ends_the_followers_stream_with_its_error() {
    let (requests, inbound) = mpsc::channel(STREAM_DEPTH);
    let mut replies = serve(ReceiverStream::new(inbound).map(Ok), std::future::pending(), follower);
    for (seq, data) in [(1, "a"), (2, "bad"), (3, "c")] {
        requests.send(Sequenced { seq, data: data.into() }).await.expect("stream open");
    }
    let got: Vec<_> = replies.by_ref().map(|r| r.map_err(|s| s.code())).collect().await;
    assert_eq!(got, vec![Ok(Sequenced { seq: 1, data: b"A".to_vec() }), Err(tonic::Code::InvalidArgument)]);
}
