/**
 * Every API type the web app uses, imported from the server's own modules (type-only: nothing of the
 * server is bundled). A server change that alters a response shape breaks this build, never a page.
 */
import type { z } from "zod";
import type { listAuditEntries } from "../../../src/audit/queries.js";
import type { publicKeyRow } from "../../../src/auth/queries.js";
import type {
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
import type { RateRuleInput } from "../../../src/billing/rule-store.js";
import type { ModelList } from "../../../src/dashboard/api-routes.js";
import type { CallDetail, CallLeg, CallRow } from "../../../src/dashboard/calls.js";
import type { RequestLogDetail } from "../../../src/dashboard/log-detail.js";
import type { ModalityLatencyReport } from "../../../src/dashboard/modality-latency.js";
import type { DashboardCostReport } from "../../../src/dashboard/routes.js";
import type { CostPoint, CostSeries, LatencyPoint, LatencySeries } from "../../../src/dashboard/series.js";
import type { Whoami } from "../../../src/dashboard/whoami.js";
import type { RosterResponse } from "../../../src/dashboard/fleet-types.js";
import type { FleetIndex } from "../../../src/fleet/index-queries.js";
import type { ProviderTestResult } from "../../../src/manage/provider-check.js";
import type { createModelBody, modelView } from "../../../src/manage/models.js";
import type { createProject, createProjectBody, deleteProject, listProjectsWithStats, projectDetail, updateProjectBody } from "../../../src/manage/projects.js";
import type { createProviderBody, providerView, updateProviderBody } from "../../../src/manage/providers.js";
import type { LatencyReport, ModelLatency } from "../../../src/reports/latency.js";
import type { RequestLogRecord } from "../../../src/reports/logs.js";
import type { Overview } from "../../../src/reports/overview.js";
import type { getSessionDetail, SessionRow } from "../../../src/sessions/queries.js";
import type { sessionDeadAir, sessionReplay, sessionTranscript, sessionTurns } from "../../../src/sessions/drilldowns.js";
import type { RoomLatencyRecord } from "../../../src/sessions/room-latency.js";

type Result<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;

export type {
  CallDetail,
  CallLeg,
  CallRow,
  CostPoint,
  CostSeries,
  DashboardCostReport,
  FleetIndex,
  GapsResponse,
  LatencyPoint,
  LatencyReport,
  LatencySeries,
  ModalityLatencyReport,
  ModelLatency,
  Overview,
  PricingGap,
  PublicRule,
  Quote,
  QuoteBatchResponse,
  RateCardResponse,
  RequestLogDetail,
  RequestLogRecord,
  RoomLatencyRecord,
  RosterResponse,
  RuleListResponse,
  RuleUpsertResponse,
  SessionRow,
  UsageLineItem,
  UsageResponse,
  UsageTenantRow,
  Whoami,
  ModelList,
  ProviderTestResult,
};

export type SessionDetail = Result<typeof getSessionDetail>;
export type SessionTurns = Result<typeof sessionTurns>;
export type SessionDeadAir = Result<typeof sessionDeadAir>;
export type SessionTranscript = Result<typeof sessionTranscript>;
export type SessionReplay = Result<typeof sessionReplay>;
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
