//! NATS JetStream as the fleet transport: agents or rack aggregators publish their Workfeed
//! datagrams to a durable stream, and the controller consumes them through a durable consumer,
//! so neither a restart of the controller nor of the NATS server loses or double-counts a
//! record.
//!
//! * **Publishing** ([`JetStreamPublisher`]): each datagram (the [`crate::wire`] format, tagged
//!   when a key is configured) goes to the subject `<prefix>.<source>` (e.g. `workfeed.rack7`)
//!   with the message id `<agent>-<epoch>-<seq>`; the stream's duplicate window (2 min) drops a
//!   datagram published twice. A datagram whose publish was not acknowledged by the server stays
//!   queued (up to [`MAX_QUEUED`], the oldest dropped and counted beyond) and is published again
//!   on the next flush, with the same id.
//! * **Consuming** ([`JetStreamSource`]): a durable pull consumer with explicit acks. The caller
//!   ingests each message's datagram, makes the records durable (the daemon appends them to a
//!   [`crate::journal::Journal`]) and only then acknowledges. After a crash the server
//!   redelivers what was not acknowledged (after `ack_wait`), and the connection table drops
//!   the records it already holds as duplicates; so every record counts exactly once.
//! * **Authentication**: user and password, a token, or a NATS credentials file (JWT + nkey)
//!   ([`NatsAuth`]); the HMAC of the UDP path can stay on inside the datagrams.
//!
//! Touches: one NATS connection (TCP) per publisher or source.

use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;
use thiserror::Error;

/// Most datagrams a publisher keeps queued while the server does not acknowledge.
pub const MAX_QUEUED: usize = 100_000;

/// How to authenticate to the NATS server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NatsAuth {
    /// No authentication (a server on loopback).
    #[default]
    None,
    /// A user and password.
    UserPassword {
        /// The user.
        user: String,
        /// The password.
        password: String,
    },
    /// A token.
    Token(String),
    /// A NATS credentials file (a user JWT and its nkey seed).
    CredentialsFile(PathBuf),
}

/// Which server and stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsTarget {
    /// Server URL(s), e.g. `nats://10.0.0.5:4222` (comma-separated for a cluster).
    pub url: String,
    /// Credentials.
    pub auth: NatsAuth,
    /// The stream's name, e.g. `WORKFEED`.
    pub stream: String,
    /// Subject prefix; the stream holds `<prefix>.>`.
    pub prefix: String,
}

impl NatsTarget {
    /// Defaults: stream `WORKFEED`, prefix `workfeed`, no authentication.
    pub fn new(url: impl Into<String>) -> NatsTarget {
        NatsTarget {
            url: url.into(),
            auth: NatsAuth::None,
            stream: "WORKFEED".into(),
            prefix: "workfeed".into(),
        }
    }
}

/// A JetStream problem.
#[derive(Debug, Error)]
pub enum NatsError {
    /// The server could not be reached or refused the credentials.
    #[error("connecting to NATS at {url}")]
    Connect {
        /// The URL.
        url: String,
        /// What the client said.
        #[source]
        source: async_nats::ConnectError,
    },
    /// The credentials file could not be read.
    #[error("reading the NATS credentials file {path}")]
    Credentials {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The stream could not be created or found.
    #[error("JetStream stream {stream} on {url}: is JetStream enabled on the server (nats-server -js)?")]
    Stream {
        /// The stream.
        stream: String,
        /// The URL.
        url: String,
        /// What the server said.
        #[source]
        source: async_nats::jetstream::context::CreateStreamError,
    },
    /// The consumer could not be created or found.
    #[error("JetStream consumer {consumer} of stream {stream}")]
    Consumer {
        /// The durable name.
        consumer: String,
        /// The stream.
        stream: String,
        /// What the server said.
        #[source]
        source: async_nats::jetstream::stream::ConsumerError,
    },
    /// A pull request failed.
    #[error("pulling from JetStream consumer {consumer}")]
    Pull {
        /// The durable name.
        consumer: String,
        /// What the client said.
        #[source]
        source: async_nats::jetstream::consumer::pull::BatchError,
    },
    /// A subject part is not a single token.
    #[error("NATS subject part {0:?} must be one token of letters, digits, '-' or '_'")]
    BadToken(String),
}

fn check_token(t: &str) -> Result<(), NatsError> {
    let ok = !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(NatsError::BadToken(t.into()))
    }
}

async fn connect(t: &NatsTarget, name: &str) -> Result<jetstream::Context, NatsError> {
    let mut opts = async_nats::ConnectOptions::new()
        .name(name)
        .connection_timeout(Duration::from_secs(5));
    opts = match &t.auth {
        NatsAuth::None => opts,
        NatsAuth::UserPassword { user, password } => opts.user_and_password(user.clone(), password.clone()),
        NatsAuth::Token(tok) => opts.token(tok.clone()),
        NatsAuth::CredentialsFile(p) => opts
            .credentials_file(p)
            .await
            .map_err(|source| NatsError::Credentials {
                path: p.clone(),
                source,
            })?,
    };
    let client = opts
        .connect(t.url.as_str())
        .await
        .map_err(|source| NatsError::Connect {
            url: t.url.clone(),
            source,
        })?;
    Ok(jetstream::new(client))
}

/// The stream every publisher and source of `t` uses: file storage, subjects `<prefix>.>`,
/// a 2-minute duplicate window, messages kept `max_age`.
async fn ensure_stream(
    js: &jetstream::Context,
    t: &NatsTarget,
    max_age: Duration,
) -> Result<stream::Stream, NatsError> {
    check_token(&t.prefix)?;
    js.get_or_create_stream(stream::Config {
        name: t.stream.clone(),
        subjects: vec![format!("{}.>", t.prefix)],
        storage: stream::StorageType::File,
        duplicate_window: Duration::from_secs(120),
        max_age,
        ..Default::default()
    })
    .await
    .map_err(|source| NatsError::Stream {
        stream: t.stream.clone(),
        url: t.url.clone(),
        source,
    })
}

/// How long the stream keeps messages unless told otherwise.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// Publishes Workfeed datagrams to a stream.
#[derive(Debug)]
pub struct JetStreamPublisher {
    js: jetstream::Context,
    subject: String,
    queue: VecDeque<(String, bytes::Bytes)>,
    dropped: u64,
}

impl JetStreamPublisher {
    /// Connects and makes sure the stream exists; datagrams go to `<prefix>.<source>`.
    pub async fn connect(t: &NatsTarget, source: &str) -> Result<JetStreamPublisher, NatsError> {
        check_token(source)?;
        let js = connect(t, &format!("workfeed-{source}")).await?;
        ensure_stream(&js, t, DEFAULT_MAX_AGE).await?;
        Ok(JetStreamPublisher {
            js,
            subject: format!("{}.{}", t.prefix, source),
            queue: VecDeque::new(),
            dropped: 0,
        })
    }

    /// Queues a datagram under its id (`<agent>-<epoch>-<seq>`).
    pub fn queue(&mut self, id: String, datagram: Vec<u8>) {
        if self.queue.len() >= MAX_QUEUED {
            self.queue.pop_front();
            self.dropped += 1;
        }
        self.queue.push_back((id, datagram.into()));
    }

    /// Datagrams waiting for the server's acknowledgement.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Datagrams dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Publishes every queued datagram and waits for the server's acknowledgements (at most
    /// `timeout` in all); what was not acknowledged stays queued. Returns how many were
    /// acknowledged.
    pub async fn flush(&mut self, timeout: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut acks = Vec::with_capacity(self.queue.len());
        for (id, payload) in &self.queue {
            let msg = jetstream::message::PublishMessage::build()
                .payload(payload.clone())
                .message_id(id);
            match tokio::time::timeout_at(deadline, self.js.send_publish(self.subject.clone(), msg)).await {
                Ok(Ok(fut)) => acks.push(Some(fut)),
                _ => {
                    acks.push(None);
                    break;
                }
            }
        }
        let mut done = vec![false; acks.len()];
        for (i, a) in acks.into_iter().enumerate() {
            if let Some(fut) = a {
                done[i] = matches!(
                    tokio::time::timeout_at(deadline, std::future::IntoFuture::into_future(fut)).await,
                    Ok(Ok(_))
                );
            }
        }
        let n = done.iter().filter(|d| **d).count();
        let mut i = 0;
        self.queue.retain(|_| {
            let keep = !done.get(i).copied().unwrap_or(false);
            i += 1;
            keep
        });
        if !self.queue.is_empty() {
            tracing::warn!(
                queued = self.queue.len(),
                "JetStream did not acknowledge every datagram; they stay queued and are published again"
            );
        }
        n
    }
}

/// A durable consumer of the stream.
#[derive(Debug)]
pub struct JetStreamSource {
    consumer: consumer::PullConsumer,
    name: String,
}

/// Settings of a [`JetStreamSource`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceConfig {
    /// Server and stream.
    pub target: NatsTarget,
    /// The durable consumer's name (one per controller).
    pub consumer: String,
    /// How long the server waits for an acknowledgement before redelivering.
    pub ack_wait: Duration,
}

/// One delivered datagram: its payload, and the handle that acknowledges it.
#[derive(Debug)]
pub struct Delivery {
    /// The Workfeed datagram.
    pub payload: bytes::Bytes,
    message: jetstream::Message,
}

impl Delivery {
    /// Acknowledges it (the server will not redeliver it). An error is returned, not retried:
    /// an unacknowledged message is redelivered, and its records are then duplicates.
    pub async fn ack(&self) -> Result<(), async_nats::Error> {
        self.message.ack().await
    }
}

impl JetStreamSource {
    /// Connects, makes sure the stream exists, and opens (or creates) the durable consumer.
    pub async fn open(cfg: &SourceConfig) -> Result<JetStreamSource, NatsError> {
        check_token(&cfg.consumer)?;
        let js = connect(&cfg.target, &format!("polyphony-{}", cfg.consumer)).await?;
        let stream = ensure_stream(&js, &cfg.target, DEFAULT_MAX_AGE).await?;
        let consumer = stream
            .get_or_create_consumer(
                &cfg.consumer,
                consumer::pull::Config {
                    durable_name: Some(cfg.consumer.clone()),
                    ack_policy: consumer::AckPolicy::Explicit,
                    ack_wait: cfg.ack_wait,
                    max_ack_pending: 1_000_000,
                    ..Default::default()
                },
            )
            .await
            .map_err(|source| NatsError::Consumer {
                consumer: cfg.consumer.clone(),
                stream: cfg.target.stream.clone(),
                source,
            })?;
        Ok(JetStreamSource {
            consumer,
            name: cfg.consumer.clone(),
        })
    }

    /// Up to `max` deliveries, waiting at most `wait` for the first.
    pub async fn pull(&self, max: usize, wait: Duration) -> Result<Vec<Delivery>, NatsError> {
        let pull_err = |source| NatsError::Pull {
            consumer: self.name.clone(),
            source,
        };
        let mut batch = self
            .consumer
            .batch()
            .max_messages(max)
            .expires(wait)
            .messages()
            .await
            .map_err(pull_err)?;
        let mut out = Vec::new();
        while let Some(m) = batch.next().await {
            match m {
                Ok(message) => out.push(Delivery {
                    payload: message.message.payload.clone(),
                    message,
                }),
                Err(e) => {
                    tracing::debug!(error = %e, "a JetStream delivery failed; it will be redelivered");
                    break;
                }
            }
        }
        Ok(out)
    }
}
