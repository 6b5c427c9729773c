/**
 * Every API type the web app uses, imported from the server's own modules (type-only: nothing of the
 * server is bundled). A server change that alters a response shape breaks this build, never a page.
 * Routes declared with defineRoute give their answer types as z.infer of the zod schemas that the
 * OpenAPI document is generated from; the rest still come from the functions that build the answers.
 */
import type { z } from "zod";
import type { listAuditEntries } from "../../../src/audit/queries.js";
import type { publicKeyRow } from "../../../src/auth/queries.js";
import type { RateRuleInput } from "../../../src/billing/rule-store.js";
import type {
  CallDetailSchema,
  CallLegSchema,
  CallRowSchema,
  CostPointSchema,
  CostSeriesSchema,
  DashboardCostReportSchema,
  DashboardModelListSchema,
  LatencyPointSchema,
  LatencySeriesSchema,
  ModalityLatencyReportSchema,
  RequestLogDetailSchema,
  SessionDeadAirSchema,
  SessionReplaySchema,
  SessionTranscriptSchema,
  SessionTurnsSchema,
  WhoamiSchema,
} from "../../../src/dashboard/schemas.js";
import type { FleetIndexSchema, RosterSchema } from "../../../src/fleet/schemas.js";
import type { createModelBody, modelView } from "../../../src/manage/models.js";
import type { createProject, createProjectBody, deleteProject, listProjectsWithStats, projectDetail, updateProjectBody } from "../../../src/manage/projects.js";
import type { createProviderBody, providerView, updateProviderBody } from "../../../src/manage/providers.js";
import type { LatencyReportSchema, ModelLatencySchema, OverviewSchema, RequestLogRecordSchema } from "../../../src/reports/schemas.js";
import type { SessionDetailSchema, SessionRowSchema } from "../../../src/sessions/schemas.js";

type Result<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;

// Answers of the routes declared with defineRoute: inferred from the very schemas the server documents
// at /v1/openapi.json and checks its answers against in test mode (src/*/schemas.ts).
export type DashboardCostReport = z.infer<typeof DashboardCostReportSchema>;
export type LatencyReport = z.infer<typeof LatencyReportSchema>;
export type ModelLatency = z.infer<typeof ModelLatencySchema>;
export type RequestLogRecord = z.infer<typeof RequestLogRecordSchema>;
export type RequestLogDetail = z.infer<typeof RequestLogDetailSchema>;
export type Overview = z.infer<typeof OverviewSchema>;
export type Whoami = z.infer<typeof WhoamiSchema>;
export type CostPoint = z.infer<typeof CostPointSchema>;
export type CostSeries = z.infer<typeof CostSeriesSchema>;
export type LatencyPoint = z.infer<typeof LatencyPointSchema>;
export type LatencySeries = z.infer<typeof LatencySeriesSchema>;
export type ModalityLatencyReport = z.infer<typeof ModalityLatencyReportSchema>;
export type CallRow = z.infer<typeof CallRowSchema>;
export type CallLeg = z.infer<typeof CallLegSchema>;
export type CallDetail = z.infer<typeof CallDetailSchema>;
export type ModelList = z.infer<typeof DashboardModelListSchema>;
export type SessionRow = z.infer<typeof SessionRowSchema>;
export type SessionDetail = z.infer<typeof SessionDetailSchema>;
export type SessionTurns = z.infer<typeof SessionTurnsSchema>;
export type SessionDeadAir = z.infer<typeof SessionDeadAirSchema>;
export type SessionTranscript = z.infer<typeof SessionTranscriptSchema>;
export type SessionReplay = z.infer<typeof SessionReplaySchema>;
/** GET /v1/agents, the live roster. */
export type RosterResponse = z.infer<typeof RosterSchema>;
/** GET /api/agents, the fleet index. */
export type FleetIndex = z.infer<typeof FleetIndexSchema>;

// Answers typed by the server's own declarations, passed on as they are.
export type {
  GapsResponse,
  PricingGap,
  PublicRule,
  Quote,
  QuoteBatchResponse,
  RateCardResponse,
  RuleListResponse,
  RuleUpsertResponse,
  UsageLineItem,
  UsageResponse,
  UsageTenantRow,
} from "../../../src/billing/responses.js";
export type { ProviderTestResult } from "../../../src/manage/provider-check.js";
export type { RoomLatencyRecord } from "../../../src/sessions/room-latency.js";

export type ProjectList = Result<typeof listProjectsWithStats>;
export type ProjectDetail = Result<typeof projectDetail>;
export type ProjectCreated = Result<typeof createProject>;
export type ProjectCreateBody = z.input<typeof createProjectBody>;
export type ProjectUpdateBody = z.input<typeof updateProjectBody>;
export type ProviderView = ReturnType<typeof providerView>;
export type ProviderCreateBody = z.input<typeof createProviderBody>;
export type ProviderUpdateBody = z.input<typeof updateProviderBody>;
export type ModelView = ReturnType<typeof modelView>;
export type ModelCreateBody = z.input<typeof createModelBody>;
export type AuditEntry = Result<typeof listAuditEntries>[number];
export type ApiKey = ReturnType<typeof publicKeyRow>;
export type MintedKey = ApiKey & { plaintext: string; key: ApiKey };
export type RuleBody = RateRuleInput;
/** Delete without confirm answers a preview (`would_delete`); with confirm, what was deleted. */
export type DeleteAnswer = Result<typeof deleteProject>;
