//! Cache accounting through the router: an agent task resending one long system prompt with the
//! caller's own checkpoint gets a cache write on its first step, reads after, and the usage
//! split, cost and savings that follow from the price book.

mod common;

use common::{config, emulator, router_with};
use laneway::{CachePoint, GenerateRequest, Message, SystemBlock};

#[tokio::test]
async fn a_twelve_step_agent_writes_once_then_reads() {
    let emu = emulator().await;
    let router = router_with(&emu, config("")).await;
    let system = "You are a careful operations agent. Follow the runbook exactly. ".repeat(100);
    let mut history = vec![Message::user("Start: the checkout service is slow.")];
    let mut written = 0;
    for step in 0..12 {
        let mut req = GenerateRequest::new(history.clone())
            .family("claude")
            .max_tokens(20);
        req.system = vec![
            SystemBlock::Text(system.clone()),
            SystemBlock::CachePoint(CachePoint::default()),
        ];
        let r = router.generate(req).await.unwrap();
        let u = r.usage;
        let price = router.config().models[&r.decision.model].price;
        if step == 0 {
            assert!(
                u.cache_write_tokens >= 1024,
                "step 1 writes the prefix: {u:?}"
            );
            assert_eq!(u.cache_read_tokens, 0);
            written = u.cache_write_tokens;
            assert!(
                r.cache_savings_usd < 0.0,
                "a write costs more than plain input"
            );
        } else {
            assert_eq!(
                u.cache_read_tokens,
                written,
                "step {} reads the cached prefix",
                step + 1
            );
            assert_eq!(u.cache_write_tokens, 0);
            assert!(r.cache_savings_usd > 0.0);
        }
        let expected = (f64::from(u.input_tokens) * price.input_per_1k
            + f64::from(u.cache_read_tokens) * price.cache_read_per_1k.unwrap()
            + f64::from(u.cache_write_tokens) * price.cache_write_per_1k.unwrap()
            + f64::from(u.output_tokens) * price.output_per_1k)
            / 1000.0;
        let profile = if r.decision.target.starts_with("global.") {
            router.config().pricing.global_profile_multiplier
        } else {
            1.0
        };
        assert!(
            (r.cost_usd - expected * profile).abs() < 1e-12,
            "step {}: {} vs {}",
            step + 1,
            r.cost_usd,
            expected * profile
        );
        history.push(Message::assistant(r.text()));
        history.push(Message::user(format!(
            "Observation {step}: latency is still high."
        )));
    }
}
