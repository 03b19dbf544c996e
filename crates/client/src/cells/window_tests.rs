//! Unit tests of the window's own helpers (backoff, a dead worker or collector).

use super::*;

fn streams(workers: Vec<JoinHandle<()>>, collector: JoinHandle<Vec<Measured>>) -> Streams {
    Streams {
        workers,
        collector,
        live: Arc::new(LiveWindow::new(0, Duration::ZERO, true)),
        stop: CancellationToken::new(),
    }
}

#[test]
fn backoff_doubles_up_to_five_seconds() {
    let ms: Vec<u128> = [1, 2, 3, 7, 8, 20].map(|n| backoff(n).as_millis()).to_vec();
    assert_eq!(ms, vec![50, 100, 200, 3200, 5000, 5000]);
}

#[tokio::test]
async fn a_worker_that_died_is_a_fault_not_an_empty_record_list() {
    let dead = tokio::spawn(async { panic!("boom") });
    let fine = tokio::spawn(async {});
    let (records, fault) = stop_streams(streams(
        vec![fine, dead],
        tokio::spawn(async { Vec::new() }),
    ))
    .await;
    assert!(records.is_empty());
    let fault = fault.expect("a fault");
    assert!(fault.starts_with("a stream worker died"), "{fault}");
}

#[tokio::test]
async fn a_collector_that_died_is_a_fault() {
    let collector = tokio::spawn(async {
        if true {
            panic!("collector boom");
        }
        Vec::new()
    });
    let (_, fault) = stop_streams(streams(Vec::new(), collector)).await;
    assert!(
        fault
            .expect("a fault")
            .starts_with("the record collector died")
    );
    let (_, fault) = stop_streams(streams(Vec::new(), tokio::spawn(async { Vec::new() }))).await;
    assert_eq!(fault, None);
}
